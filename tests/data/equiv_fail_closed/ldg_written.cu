// ld.global.nc (__ldg) is for data read-only for the whole kernel.
// pass 1 writes c[i] = 2*a[i]; __syncthreads; pass 2 reads the neighbour's c
extern "C" __global__ void ref(const float* a, float* c, float* d) {
  int i = threadIdx.x;
  c[i] = 2.0f * a[i];
  __syncthreads();
  d[i] = *(volatile float*)&c[i ^ 1];
}
// reads c, which it wrote, through the non-coherent path: may see the old c
extern "C" __global__ void ldg_written(const float* a, float* c, float* d) {
  int i = threadIdx.x;
  c[i] = 2.0f * a[i];
  __syncthreads();
  d[i] = __ldg(&c[i ^ 1]);
}
// reads a, which no thread writes, through the non-coherent path: fine
extern "C" __global__ void ldg_read_only(const float* a, float* c, float* d) {
  int i = threadIdx.x;
  c[i] = 2.0f * __ldg(&a[i]);
  __syncthreads();
  d[i] = *(volatile float*)&c[i ^ 1];
}

// ld.global.nc (__ldg) is the non-coherent read-only path: bytes the launch wrote may read stale
// through it, whatever barrier orders the write before the load.

// c[i] written, a barrier, then c[i ^ 1] read through __ldg into d: may return the value from before
extern "C" __global__ void after_write(const float* a, float* c, float* d) {
  int i = threadIdx.x;
  c[i] = a[i] * 2.0f;
  __syncthreads();
  d[i] = __ldg(&c[i ^ 1]);
}

// the same with a coherent load: ordered by the barrier, correct
extern "C" __global__ void coherent(const float* a, float* c, float* d) {
  int i = threadIdx.x;
  c[i] = a[i] * 2.0f;
  __syncthreads();
  d[i] = c[i ^ 1];
}

// __ldg of an input the kernel never writes: correct
extern "C" __global__ void read_only(const float* a, float* c) {
  int i = threadIdx.x;
  c[i] = __ldg(&a[i]) + __ldg(&a[i ^ 1]);
}

// in place: each element read through __ldg before the thread's own write of it: correct
extern "C" __global__ void in_place(float* c) {
  int i = threadIdx.x;
  c[i] = __ldg(&c[i]) * 2.0f;
}

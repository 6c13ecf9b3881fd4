// Integer kernels a model may not cover: each reads a and b (int32) and writes c (int32).
extern "C" __global__ void half(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] >> 1;
}
extern "C" __global__ void quarter(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] >> 2;
}
extern "C" __global__ void edge_clamp(const int *a, const int *b, int *c, int n) {  // prmt's .ecl mode
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int r;
  asm("prmt.b32.ecl %0, %1, %2, %2;" : "=r"(r) : "r"(a[i]), "r"(b[i]));
  if (i < n) c[i] = r;
}

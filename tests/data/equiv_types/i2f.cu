// Integer elements converted to float, for the real model of `kverify equiv` (each kernel k reads
// a (int32) and writes c (float32)). The real model reads an element as its value, untyped: the
// conversion of that value as signed or unsigned, and its bits read as a float, must stay apart.
extern "C" __global__ void as_signed(const int *a, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = (float)a[i];
}
extern "C" __global__ void as_unsigned(const int *a, float *c, int n) {  // differs for a < 0
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = (float)(unsigned)a[i];
}
extern "C" __global__ void as_bits(const int *a, float *c, int n) {  // differs for every a but 0
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __int_as_float(a[i]);
}
extern "C" __global__ void twice(const int *a, float *c, int n) {  // (float)a + (float)a: equivalent to 2 * (float)a
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = (float)a[i] + (float)a[i];
}
extern "C" __global__ void doubled(const int *a, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = (float)a[i] * 2.0f;
}

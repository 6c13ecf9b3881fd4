// Seeded bug: (a + b) >> 1 in 32 bits wraps around when a + b overflows. Small inputs agree
// with midpoint.cu; only large ones show the difference.
extern "C" __global__ void midpoint(const int* a, const int* b, int* m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i] = (a[i] + b[i]) >> 1;
}

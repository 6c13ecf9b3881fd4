// Element-wise vector add: c[i] = a[i] + b[i], one element per thread.
// Seeded functional bug: the tail guard is off by one, so c[n-1] is never written.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) {  // BUG: should be i < n
    c[i] = a[i] + b[i];
  }
}

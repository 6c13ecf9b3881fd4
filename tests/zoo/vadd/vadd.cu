// Element-wise vector add: c[i] = a[i] + b[i], one element per thread.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
  }
}

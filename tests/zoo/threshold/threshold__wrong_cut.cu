// Seeded bug: the cut-off is 0.25 instead of 0.5. Both kernels write every y[i] (the
// counterexample must not claim an element was never written).
extern "C" __global__ void threshold(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.25f ? x[i] : 0.0f;
}

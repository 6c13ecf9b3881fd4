// y[i] = a * x[i] over a 1-D grid; every CTA touches only its own tile: CTAs are symmetric.
extern "C" __global__ void __launch_bounds__(128) scale(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i];
}

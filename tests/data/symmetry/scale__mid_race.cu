// Seeded bug: CTA 37 also writes y[0], which CTA 0 writes: a race between CTAs.
extern "C" __global__ void __launch_bounds__(128) scale(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i];
  if (blockIdx.x == 37 && threadIdx.x == 0)
    y[0] = 0.0f;
}

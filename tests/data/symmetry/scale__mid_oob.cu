// Seeded bug: only CTA 37 writes past the end of y (a middle CTA; first and last are clean).
extern "C" __global__ void __launch_bounds__(128) scale(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i];
  if (blockIdx.x == 37 && threadIdx.x == 0)
    y[n + 5] = 0.0f;
}

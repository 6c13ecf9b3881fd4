// staged__uninit_local: CTA 37 reads the local slots t+8 .. t+15, which no store wrote.
// broadcasts lane 0's value over each half-warp that shuffles; every CTA alike: symmetric.
extern "C" __global__ void __launch_bounds__(128) staged(const float *x, float *y, int k) {
  __shared__ float s[256];
  float a[16];
  int t = threadIdx.x;
  int i = blockIdx.x * 128 + t;
  s[t] = x[i];
  for (int j = 0; j < 8; j++) a[(t + j) & 15] = x[i] + j;  // slots t .. t+7 (mod 16)
  __syncthreads();
  int off = 0;
  int loff = (blockIdx.x == 37) ? 8 : 0;
  unsigned m = 0x0000ffffu;
  float v = s[t + off] + a[(t + loff + (k & 7)) & 15];
  if ((t & 31) < 16) v = __shfl_sync(m, v, 0);
  y[i] = v;
}

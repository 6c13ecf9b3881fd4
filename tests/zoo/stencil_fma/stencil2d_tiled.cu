// Candidate: the 5-point stencil of stencil2d_naive.cu, tiled: each 16x16 block stages its
// points and a one-point halo on each side in shared memory. The arithmetic is written as in
// the naive kernel, so nvcc contracts it into the same four FMAs: bit-exact.
#define T 16

extern "C" __global__ void __launch_bounds__(T * T)
stencil2d_tiled(const float* in, float* out, int h, int w, float wc, float wn, float ws, float we, float ww) {
  __shared__ float t[T + 2][T + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * T + tx, y = blockIdx.y * T + ty;
  t[ty + 1][tx + 1] = x < w && y < h ? in[y * w + x] : 0.0f;
  if (ty == 0) t[0][tx + 1] = x < w && y > 0 && y - 1 < h ? in[(y - 1) * w + x] : 0.0f;
  if (ty == T - 1) t[T + 1][tx + 1] = x < w && y + 1 < h ? in[(y + 1) * w + x] : 0.0f;
  if (tx == 0) t[ty + 1][0] = y < h && x > 0 && x - 1 < w ? in[y * w + x - 1] : 0.0f;
  if (tx == T - 1) t[ty + 1][T + 1] = y < h && x + 1 < w ? in[y * w + x + 1] : 0.0f;
  __syncthreads();
  if (x < w && y < h)
    out[y * w + x] = wc * t[ty + 1][tx + 1] + wn * t[ty][tx + 1] + ws * t[ty + 2][tx + 1] + we * t[ty + 1][tx + 2] + ww * t[ty + 1][tx];
}

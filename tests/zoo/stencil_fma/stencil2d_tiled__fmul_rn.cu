// Candidate: the tiled 5-point stencil of stencil2d_tiled.cu with its products written as
// __fmul_rn, which nvcc never contracts: equal over the reals, different in the last bits.
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
    out[y * w + x] = __fmul_rn(wc, t[ty + 1][tx + 1]) + __fmul_rn(wn, t[ty][tx + 1]) + __fmul_rn(ws, t[ty + 2][tx + 1]) +
                     __fmul_rn(we, t[ty + 1][tx + 2]) + __fmul_rn(ww, t[ty + 1][tx]);
}

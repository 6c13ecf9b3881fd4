// Reference: a naive weighted 5-point 2D stencil on an h x w grid (row-major), one thread per
// point, every load from global memory; points outside the grid read as 0.
// out = wc*c + wn*north + ws*south + we*east + ww*west, contracted by nvcc into four FMAs.
extern "C" __global__ void stencil2d_naive(const float* in, float* out, int h, int w, float wc, float wn,
                                           float ws, float we, float ww) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float c = in[y * w + x];
  float n = y > 0 ? in[(y - 1) * w + x] : 0.0f;
  float s = y + 1 < h ? in[(y + 1) * w + x] : 0.0f;
  float e = x + 1 < w ? in[y * w + x + 1] : 0.0f;
  float v = x > 0 ? in[y * w + x - 1] : 0.0f;
  out[y * w + x] = wc * c + wn * n + ws * s + we * e + ww * v;
}

// Reference: a naive weighted 3-point stencil, one thread per point, every load from
// global memory. out[i] = w0*in[i-1] + w1*in[i] + w2*in[i+1], in[] taken as 0 outside [0, n).
// nvcc contracts the expression into fma(w2, r, fma(w1, c, w0 * l)).
extern "C" __global__ void stencil_naive(const float* in, float* out, int n, float w0, float w1, float w2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float l = i > 0 ? in[i - 1] : 0.0f;
  float c = in[i];
  float r = i + 1 < n ? in[i + 1] : 0.0f;
  out[i] = w0 * l + w1 * c + w2 * r;
}

// Candidate: the tiled stencil of stencil_tiled.cu whose products are written with
// __fmul_rn, which nvcc never contracts: three roundings of products and two of sums
// instead of two FMAs. Equal over the reals, different in the last bits (bitexact).
#define BLOCK 128

extern "C" __global__ void __launch_bounds__(BLOCK)
stencil_tiled(const float* in, float* out, int n, float w0, float w1, float w2) {
  __shared__ float s[BLOCK + 2];
  int t = threadIdx.x;
  int i = blockIdx.x * BLOCK + t;
  s[t + 1] = i < n ? in[i] : 0.0f;
  if (t == 0) s[0] = i > 0 && i - 1 < n ? in[i - 1] : 0.0f;
  if (t == BLOCK - 1) s[BLOCK + 1] = i + 1 < n ? in[i + 1] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = __fmul_rn(w0, s[t]) + __fmul_rn(w1, s[t + 1]) + __fmul_rn(w2, s[t + 2]);
}

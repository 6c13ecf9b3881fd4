// Candidate: the same weighted 3-point stencil, tiled: each block of 128 threads stages its
// points and a one-point halo on each side in shared memory. The arithmetic is written
// exactly as in stencil_naive.cu, so nvcc contracts it into the same two FMAs: bit-exact.
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
  if (i < n) out[i] = w0 * s[t] + w1 * s[t + 1] + w2 * s[t + 2];
}

// B5 (a race that random tests may miss): a block reduction in shared memory with the
// barrier between the tree steps left out.
extern "C" __global__ void racy_sum(const float *x, float *out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    // missing __syncthreads()
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

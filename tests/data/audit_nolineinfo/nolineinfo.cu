// Shared-memory tree reduction: each block sums BLOCK floats and writes one
// partial sum to out[blockIdx.x].
// Seeded bug: the __syncthreads() between reduction levels is missing.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_smem(const float* in, float* out, int n) {
  __shared__ float sdata[BLOCK];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * BLOCK + tid;
  sdata[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];  // BUG: no barrier between levels, reads sdata[tid + s] another thread writes one level earlier
    }
  }
  if (tid == 0) {
    out[blockIdx.x] = sdata[0];
  }
}

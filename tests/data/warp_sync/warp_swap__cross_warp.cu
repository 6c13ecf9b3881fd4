// Each thread reads the element the other warp of its CTA wrote.
// Seeded race: __syncwarp orders the lanes of one warp only; the read of s[t ^ 32]
// needs __syncthreads.
#define BLOCK 64

extern "C" __global__ void __launch_bounds__(BLOCK)
warp_swap(const float* in, float* out) {
  __shared__ float s[BLOCK];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * BLOCK + t];
  __syncwarp();  // BUG: should be __syncthreads()
  out[blockIdx.x * BLOCK + t] = s[t ^ 32u];
}

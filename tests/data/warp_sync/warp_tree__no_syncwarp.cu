// Per-warp tree sum in shared memory.
// Seeded race: no __syncwarp between the steps, so a lane may read a partial sum that
// another lane of its warp has not written yet (independent thread scheduling).
#define BLOCK 64

extern "C" __global__ void __launch_bounds__(BLOCK)
warp_tree(const float* in, float* out) {
  __shared__ float s[BLOCK];
  unsigned t = threadIdx.x, lane = t & 31u;
  s[t] = in[blockIdx.x * BLOCK + t];
  __syncwarp();
  for (unsigned off = 16; off > 0; off >>= 1) {
    if (lane < off) {
      s[t] += s[t + off];  // BUG: no __syncwarp after this step
    }
  }
  if (lane == 0) {
    out[blockIdx.x * (BLOCK / 32) + t / 32] = s[t];
  }
}

// Warp 0 raises a volatile flag; warp 1 reads it once and picks an index by it. The seeded bug:
// the index when the flag is already up overruns `out`, which only a schedule that runs warp 0's
// store before warp 1's read reaches (no atomic and no barrier orders them: strong accesses).
extern "C" __global__ void flag_order(unsigned int* out) {
  __shared__ volatile unsigned int flag;
  unsigned int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (warp == 0 && lane == 0) flag = 1;
  if (warp == 1 && lane == 0) out[flag ? 4 : 0] = 1;
}

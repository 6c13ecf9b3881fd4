// Two pairs of warps, each pair taking tickets from its own counter: the order within a pair
// matters (the ticket is used), the order across pairs does not. 2 x 2 classes of schedules.
__device__ unsigned int tickets_a = 0;
__device__ unsigned int tickets_b = 0;

extern "C" __global__ void two_counters(unsigned int* out) {
  unsigned int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    unsigned int t = atomicAdd(warp < 2 ? &tickets_a : &tickets_b, 1u);
    out[warp] = t;
  }
}

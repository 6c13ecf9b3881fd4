// The handshake of spin_flag with a spinner that counts its polls (a backoff counter): its
// registers change every iteration, so only fairness lets warp 1 set the flag. The flag is
// set only for an input the launch never gives, so the spin never ends.
__device__ volatile int ready = 0;

extern "C" __global__ void spin_flag_backoff(const int* in, int* data, int* out) {
  unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (warp == 1) {
    data[lane] = in[lane] + 1;
    __threadfence();
    if (lane == 0 && in[0] < 0) ready = 1;
  } else {
    unsigned int polls = 0;
    while (ready == 0) {
      ++polls;
    }
    __threadfence();
    out[lane] = data[lane] + (polls > 1000000000u ? 1 : 0);
  }
}

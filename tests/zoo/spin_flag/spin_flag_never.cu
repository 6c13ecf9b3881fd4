// The handshake of spin_flag with the flag set only for an input the launch never gives:
// warp 0 spins forever.
__device__ volatile int ready = 0;

extern "C" __global__ void spin_flag_never(const int* in, int* data, int* out) {
  unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (warp == 1) {
    data[lane] = in[lane] + 1;
    __threadfence();
    if (lane == 0 && in[0] < 0) ready = 1;
  } else {
    while (ready == 0) {
    }
    __threadfence();
    out[lane] = data[lane];
  }
}

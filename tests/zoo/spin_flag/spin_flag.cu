// A flag handshake between two warps of a block: warp 1 writes data, fences and sets the
// flag; warp 0 spins until it sees the flag, fences and reads the data.
__device__ volatile int ready = 0;

extern "C" __global__ void spin_flag(const int* in, int* data, int* out) {
  unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (warp == 1) {
    data[lane] = in[lane] + 1;
    __threadfence();
    if (lane == 0) ready = 1;
  } else {
    while (ready == 0) {
    }
    __threadfence();
    out[lane] = data[lane];
  }
}

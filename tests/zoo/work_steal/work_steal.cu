// Work stealing: the warps of a block take 32-element tiles from an atomic ticket counter
// until the tickets run out; each warp stages its tile in its own shared row, then scales
// it into out.
#define WARPS 2

__device__ unsigned int next_tile = 0;

extern "C" __global__ void work_steal(const float* in, float* out, unsigned int ntiles) {
  __shared__ float stage[WARPS][32];
  unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  while (true) {
    unsigned int t = 0;
    if (lane == 0) t = atomicAdd(&next_tile, 1u);
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t >= ntiles) break;
    stage[warp][lane] = in[t * 32 + lane];
    __syncwarp();
    out[t * 32 + lane] = 2.0f * stage[warp][31 - lane];
    __syncwarp();
  }
}

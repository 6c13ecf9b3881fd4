// Work stealing with the staging row picked by ticket instead of by warp: harmless while
// one warp takes every ticket, a shared-memory race as soon as two warps take tickets
// (their rows t % WARPS collide).
#define WARPS 2

__device__ unsigned int next_tile = 0;

extern "C" __global__ void work_steal_slot(const float* in, float* out, unsigned int ntiles) {
  __shared__ float stage[WARPS][32];
  unsigned int lane = threadIdx.x & 31;
  while (true) {
    unsigned int t = 0;
    if (lane == 0) t = atomicAdd(&next_tile, 1u);
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t >= ntiles) break;
    stage[t % WARPS][lane] = in[t * 32 + lane];
    __syncwarp();
    out[t * 32 + lane] = 2.0f * stage[t % WARPS][31 - lane];
    __syncwarp();
  }
}

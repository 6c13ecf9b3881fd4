// ring_all: generic-store producer warp -> consumer warps, full/empty mbarrier ring (sm_90), every
// thread arriving. Warp 4 (all 32 lanes) waits empty[s] (parity ((it/STAGES)&1)^1: a fresh
// barrier's pass-through first), writes stage s with st.shared and arrives on full[s] (count 32).
// Warps 0-3 wait full[s] (parity (it/STAGES)&1), read the stage, accumulate into a per-thread
// shared slot acc[tid] (a shared write, as a producer's fill is) and arrive on empty[s] (count 128).
// Correct. Built with -DCONSUMER_PARITY(it)='((((it)/STAGES)&1)^1)' (ring_all__consumer_parity_flipped.ptx)
// the consumers' first wait names parity 1 on a fresh full[s]: it returns at once, before the
// producer wrote the stage.
#include <cstdint>
#define STAGES 2
#define TILE 128
#ifndef CONSUMER_PARITY
#define CONSUMER_PARITY(it) (((it) / STAGES) & 1)
#endif
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory"); }
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\tLAB_WAIT_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra LAB_WAIT_%=;\n\t}"
               ::"r"(smem_u32(bar)), "r"(parity) : "memory"); }

extern "C" __global__ void __launch_bounds__(160) ring_all(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ float stage[STAGES][TILE];
  __shared__ float acc[128];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 32); mbar_init(&empty[s], 128); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (threadIdx.x < 128) acc[threadIdx.x] = 0.f;
  __syncthreads();
  if (warp == 4) {
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
      for (int j = lane; j < TILE; j += 32) stage[s][j] = in[it * TILE + j];
      
      mbar_arrive(&full[s]);
    }
  } else {
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&full[s], CONSUMER_PARITY(it));
      acc[threadIdx.x] += stage[s][threadIdx.x];
      
      mbar_arrive(&empty[s]);
    }
    out[threadIdx.x] = acc[threadIdx.x];
  }
}

// gen_ring_order: gen_ring (below) plus an "order" barrier (count 1) that the producer's lane 0
// arrives on once, in the first iteration of its loop (CUTLASS's load-order barrier, which the
// mainloop producer signals once for an epilogue load warp). No thread waits on it: its phases
// order nothing, so the arrivals obligation does not count them. Built with -DWAIT_ORDER
// (gen_ring_order__waited.ptx) consumer warp 0 waits for its phase 0 after the loop: the
// arrive then counts, and the site runs in iteration 0 only (not proved for every phase).
// -DORDER_COUNT=2 (gen_ring_order__count2.ptx): the arrive brings 2 arrivals on count 1 and drives the
// pending count below 0 -- counted, not skipped. -DNO_ORDER_INIT (gen_ring_order__uninit.ptx): no
// mbarrier.init of that barrier -- the arrive is on an uninitialized barrier (violated).
// gen_ring: generic-store producer warp -> consumer warps, full/empty mbarrier ring (sm_90).
// Warp 4 (all 32 lanes) waits empty[s], writes stage s with st.shared, __syncwarp, lane 0
// arrives on full[s] (count 1). Warps 0-3 wait full[s] (parity (it/STAGES)&1), read the stage,
// accumulate into a per-thread shared slot acc[tid] (a shared write), __syncwarp, lane 0 arrives
// on empty[s] (count 4). Producer waits empty[s] with parity ((it/STAGES)&1)^1. Correct; built with
// -DCONSUMER_PARITY(it)='((((it)/STAGES)&1)^1)' (gen_ring__consumer_parity_flipped.ptx) the consumers'
// first wait names parity 1 on a fresh full[s] and returns before the stage is written.
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

extern "C" __global__ void __launch_bounds__(160) gen_ring_order(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ float stage[STAGES][TILE];
  __shared__ float acc[128];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];
  __shared__ __align__(8) uint64_t order;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], 4); }
#ifndef NO_ORDER_INIT
    mbar_init(&order, 1);
#endif
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
      __syncwarp();
      if (lane == 0) mbar_arrive(&full[s]);
#ifdef ORDER_COUNT
      if (lane == 0 && it == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&order)), "r"(ORDER_COUNT) : "memory");
#else
      if (lane == 0 && it == 0) mbar_arrive(&order);
#endif
    }
  } else {
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&full[s], CONSUMER_PARITY(it));
      acc[threadIdx.x] += stage[s][threadIdx.x];
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
#ifdef WAIT_ORDER
    if (warp == 0) mbar_wait(&order, 0);
#endif
    out[threadIdx.x] = acc[threadIdx.x];
  }
}

// multicast_ring: the CUTLASS sm90 warp-specialized cluster pipeline idiom in a 2-CTA cluster,
// sm_90a. A stage ring of STAGES 32 x 32 float tiles with full/empty mbarriers per stage; its
// (stage, phase) state is carried across a persistent tile loop and an inner k loop, neither
// unrolled (CUTLASS's mainloops are CUTLASS_PRAGMA_NO_UNROLL).
//
// The tensor map `tmap` describes a row-major float32 matrix of num_tiles*k_tiles*32 rows x 32
// columns with a box of 32 columns x 16 rows (no swizzle; "box": [16, 32] in the launch spec,
// outermost first). The grid is (2, gridDim.y) with clusters of 2 CTAs
// along x; both CTAs of a cluster share blockIdx.y and run tiles blockIdx.y, blockIdx.y +
// gridDim.y, ... For each tile and each k step the producer (warp 0, thread 0) of CTA rank r
// waits empty[stage], announces the whole stage (4096 bytes: each CTA receives both ranks'
// halves) with arrive.expect_tx on full[stage], and multicasts (ctaMask 0b11) rows 16r..16r+15
// of the step's 32 x 32 block into byte offset 2048r of the stage in both CTAs. The consumer
// (warp 1) waits full[stage], lane l adds column l of the stage into its accumulator, fences its
// reads to the async proxy (fence.proxy.async.shared::cta), and after a __syncwarp lanes
// 0 and 1 release the stage in the CTA of cluster rank `lane` (mapa + a remote
// mbarrier.arrive.release.cluster): each CTA's empty[stage] (count 2) receives one arrival from
// each CTA's consumer per phase, so neither producer overwrites a stage a peer still reads.
// After each tile the consumer writes out[(tile*2 + rank)*32 + lane] (the column sums of the
// tile's k_tiles blocks, the same in both ranks).
//
// Protocol: thread 0 of each CTA initializes the barriers and fences the inits
// (fence.mbarrier_init.release.cluster); a cluster barrier makes both CTAs' inits visible before
// any multicast or remote arrival can reach them; a final cluster barrier keeps each CTA's
// shared memory and barriers alive until its peer has stopped copying into it and arriving on it.
//
// Seeded twins (-D):
//   SHORT_TX       expect_tx announces 2048 bytes (its own half only) while each phase of
//                  full[stage] receives 4096: a tx-bytes mismatch
//   OWN_RANK_ONLY  only lane 0 releases, and only its own CTA's empty[stage]: 1 of 2 arrivals per
//                  phase, so the producer's wait for the second round of the ring never completes
//                  (a deadlock once k_tiles * tiles > STAGES)
//   RANK0_TWICE    lanes 0 and 1 both arrive on rank 0's empty[stage]: rank 0 gets 4 arrivals per
//                  round (count 2: two phases complete, its producer runs a round ahead and
//                  overwrites stages still in use), rank 1 gets none and its producer hangs
//   RING_SKEW      rank 1's producer starts its ring at stage 1: its halves land in the stage after
//                  the one rank 0 fills in the same step; the ring state then differs between the
//                  CTAs of a cluster, so no proof may take the peers' ring steps to be in step
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define STAGES 3
#define STAGE_BYTES (TILE * TILE * 4)
#define HALF_ROWS (TILE / 2)
#define HALF_BYTES (STAGE_BYTES / 2)
#define NUM_THREADS 64

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

// Orders this thread's generic-proxy reads of a stage before the async-proxy (TMA) writes that
// refill it once the release below is observed (PTX ISA §8.6 proxies).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// The address of `bar` in the shared memory of the CTA of cluster rank `cta`, and an arrival on it
// (CUTLASS ClusterBarrier::arrive(cta_id, pred)).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(bar)), "r"(cta));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* tmap, int x, int y,
                                                      uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(smem_u32(bar)), "h"(cta_mask)
      : "memory");
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(NUM_THREADS)
    multicast_ring(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out, int k_tiles, int num_tiles) {
  __shared__ __align__(128) float stages[STAGES][TILE * TILE];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];

  const uint32_t rank = cluster_rank();
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2);
    }
    fence_mbarrier_init();
  }
  cluster_sync();

  if (warp == 0) {
    // producer
    if (threadIdx.x == 0) {
#ifdef RING_SKEW
      int stage = rank;  // BUG: rank 1's ring starts one stage ahead of its peer's (and its consumers')
#else
      int stage = 0;
#endif
      uint32_t phase = 0;
#pragma unroll 1
      for (int tile = blockIdx.y; tile < num_tiles; tile += gridDim.y) {
#pragma unroll 1
        for (int k = 0; k < k_tiles; ++k) {
          mbar_wait(&empty[stage], phase ^ 1);
#ifdef SHORT_TX
          mbar_arrive_expect_tx(&full[stage], HALF_BYTES);  // BUG: announces its own half only
#else
          mbar_arrive_expect_tx(&full[stage], STAGE_BYTES);
#endif
          tma_load_2d_multicast(reinterpret_cast<char*>(stages[stage]) + rank * HALF_BYTES, &tmap, 0,
                                (tile * k_tiles + k) * TILE + HALF_ROWS * (int)rank, &full[stage], 0x3);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    // consumer
    int stage = 0;
    uint32_t phase = 0;
    float acc = 0.0f;
#pragma unroll 1
    for (int tile = blockIdx.y; tile < num_tiles; tile += gridDim.y) {
#pragma unroll 1
      for (int k = 0; k < k_tiles; ++k) {
        mbar_wait(&full[stage], phase);
        for (int r = 0; r < TILE; ++r) acc += stages[stage][r * TILE + lane];
        fence_proxy_async_smem();
        __syncwarp();
#if defined(OWN_RANK_ONLY)
        if (lane == 0) mbar_arrive_cluster(&empty[stage], rank);  // BUG: releases its own CTA only
#elif defined(RANK0_TWICE)
        if (lane < 2) mbar_arrive_cluster(&empty[stage], 0);  // BUG: both arrivals go to rank 0
#else
        if (lane < 2) mbar_arrive_cluster(&empty[stage], lane);
#endif
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
      out[(tile * 2 + rank) * TILE + lane] = acc;
      acc = 0.0f;
    }
  }
  cluster_sync();
}

// multicast_ring_release: multicast_ring.cu's cluster pipeline with the consumer written as
// CUTLASS's sm90 warp-specialized consumer is: the wait for a tile's first k-step is hoisted
// before the k loop, and the stage released trails the one read (CUTLASS's smem_pipe_release):
// iteration k of the k loop waits for and reads step k, then releases step k - 1 (remotely, in
// both CTAs of the cluster, as multicast_ring does); after the loop the tile's last step is
// released. The release state `rstage` is a second ring register of the k loop, and the last
// release sits in the tile loop alone. The producer, the launch (launch_release.json) and the
// reference (ref.py) are multicast_ring's.
//
// Seeded twin (-D):
//   RANK0_TWICE    the releases inside the k loop both go to rank 0's empty barrier: rank 0 gets 4
//                  arrivals per step (count 2), rank 1 none
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
    multicast_ring_release(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out, int k_tiles, int num_tiles) {
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
      int stage = 0;
      uint32_t phase = 0;
#pragma unroll 1
      for (int tile = blockIdx.y; tile < num_tiles; tile += gridDim.y) {
#pragma unroll 1
        for (int k = 0; k < k_tiles; ++k) {
          mbar_wait(&empty[stage], phase ^ 1);
          mbar_arrive_expect_tx(&full[stage], STAGE_BYTES);
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
    int stage = 0, rstage = 0;  // the stage read next, the stage released next (it trails)
    uint32_t phase = 0;
    float acc = 0.0f;
#pragma unroll 1
    for (int tile = blockIdx.y; tile < num_tiles; tile += gridDim.y) {
      if (k_tiles > 0) {
        // k-step 0, before the k loop: read, no release yet
        mbar_wait(&full[stage], phase);
        for (int r = 0; r < TILE; ++r) acc += stages[stage][r * TILE + lane];
        fence_proxy_async_smem();
        __syncwarp();
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
#pragma unroll 1
        for (int k = 1; k < k_tiles; ++k) {
          mbar_wait(&full[stage], phase);
          for (int r = 0; r < TILE; ++r) acc += stages[stage][r * TILE + lane];
          fence_proxy_async_smem();
          __syncwarp();
#ifdef RANK0_TWICE
          if (lane < 2) mbar_arrive_cluster(&empty[rstage], 0);  // BUG: both arrivals go to rank 0
#else
          if (lane < 2) mbar_arrive_cluster(&empty[rstage], lane);  // release step k - 1
#endif
          if (++rstage == STAGES) rstage = 0;
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
        if (lane < 2) mbar_arrive_cluster(&empty[rstage], lane);  // the tile's last step
        if (++rstage == STAGES) rstage = 0;
      }
      out[(tile * 2 + rank) * TILE + lane] = acc;
      acc = 0.0f;
    }
  }
  cluster_sync();
}

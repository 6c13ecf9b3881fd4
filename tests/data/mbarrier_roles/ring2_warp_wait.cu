// ring2_warp_wait: tests/data/pipeline_races/ring2.cu, except that correct: the whole producer warp waits on empty[s], lane 0 posts the expect-tx and issues the copy, then __syncwarp.
//
// ring2: the zoo's bulk_pipeline (cp.async.bulk producer warp -> generic-load consumer warps,
// full/empty mbarrier ring) with two stages, for the pipeline race argument
// (kverify/verifier/races/pipeline.py). Stage s = it % 2 is filled by one cp.async.bulk
// completing on full[s]; consumers wait full[s] with parity (it/2)&1, read the stage,
// fence.proxy.async, __syncwarp, and lane 0 of each consumer warp arrives on empty[s];
// the producer waits empty[s] with parity ((it/2)&1)^1 before refilling the stage.
#include <cstdint>

#define STAGES 2
#define TILE_FLOATS 256
#define TILE_BYTES (TILE_FLOATS * 4)
#define NUM_CONSUMER_WARPS 4
#define PRODUCER_WARP 4
#define NUM_THREADS 160

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
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

__device__ __forceinline__ uint64_t mbar_arrive(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
  return state;
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

__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// 1 on exactly one lane of the (fully converged) calling warp.
__device__ __forceinline__ uint32_t elect_one() {
  uint32_t elected;
  asm volatile(
      "{\n\t"
      ".reg .pred e;\n\t"
      "elect.sync _|e, 0xffffffff;\n\t"
      "selp.u32 %0, 1, 0, e;\n\t"
      "}"
      : "=r"(elected));
  return elected;
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    ring2_warp_wait(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ __align__(128) float stage[STAGES][TILE_FLOATS];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NUM_CONSUMER_WARPS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == PRODUCER_WARP) {
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);  // the whole producer warp waits
      if (lane == 0) {                                // one lane fills the stage
        mbar_arrive_expect_tx(&full[s], TILE_BYTES);
        bulk_g2s(&stage[s][0], in + (size_t)it * TILE_FLOATS, TILE_BYTES, &full[s]);
      }
      __syncwarp();
    }
  } else {
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&full[s], (it / STAGES) & 1);
#pragma unroll
      for (int j = 0; j < TILE_FLOATS / (NUM_CONSUMER_WARPS * 32); ++j) {
        const int k = threadIdx.x + j * (NUM_CONSUMER_WARPS * 32);
        const float x = stage[s][k];
        out[(size_t)it * TILE_FLOATS + k] = 2.0f * x;
      }
      fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(&empty[s]);
      }
    }
  }
}

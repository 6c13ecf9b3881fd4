// wgmma_warp_wait: the zoo's wgmma_pipeline with one change: warp 3 of the consumer warpgroup
// does not wait on full[s] before its wgmma.mma_async. wgmma's .sync.aligned synchronizes the
// threads of a warp, not the four warps: warp 3's part of the product may read the stage before
// the copy that fills it completes (race.async-pending), though warps 0-2 waited.
//
// wgmma_pipeline: TMA (cp.async.bulk) -> wgmma two-stage pipeline, sm_90a.
//
// D(64x8, f32) = sum over it < iters of A_it(64x16, f16) * B_it(16x8, f16).
//
// One CTA of 160 threads: warps 0-3 form the consumer warpgroup (threads
// 0-127) that issues wgmma; warp 4 is the producer, one elected lane of which
// copies the operand tiles of step `it` into stage s = it % STAGES with two
// cp.async.bulk (A: 2048 bytes, B: 256 bytes) completing on full[s].
//
// Global inputs are pre-tiled: a_tiles[it] (1024 f16) and b_tiles[it]
// (128 f16) already hold A_it and B_it in the shared-memory core-matrix layout
// that the descriptors below describe (no swizzle, K-major, as in
// wgmma_tile.cu), so one contiguous bulk copy per operand fills a stage:
//   A_it[m][k] = a_tiles[it*1024 + ((m%8)*16 + (k%8)*2 + (m/8)*A_SBO + (k/8)*A_LBO)/2]
//   B_it[k][n] = b_tiles[it*128  + ((n%8)*16 + (k%8)*2 + (n/8)*B_SBO + (k/8)*B_LBO)/2]
// with A_LBO = 1024, A_SBO = 128, B_LBO = 128, B_SBO = 256 bytes.
//
// Protocol (s = it % STAGES, round = it / STAGES):
//   full[s]  count 1: producer arrive.expect_tx(2304) + complete_tx of both copies.
//            Consumers wait parity round & 1.
//   empty[s] count 4: lane 0 of each consumer warp arrives after its own
//            wgmma.wait_group 0, i.e. after the wgmma reading stage s has
//            completed for that warp; the phase therefore completes only when
//            all four warps are past their wait (wait_group only synchronizes
//            the executing warp). Producer waits parity (round & 1) ^ 1.
// TMA writes and wgmma reads of a stage are both async-proxy accesses, so no
// proxy fence is needed between them.
#include <cstdint>
#include <cuda_fp16.h>

#define STAGES 2
#define M 64
#define N 8
#define K 16
#define A_TILE_BYTES (M * K * 2)
#define B_TILE_BYTES (K * N * 2)
#define STAGE_TX_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#define A_LBO 1024
#define A_SBO 128
#define B_LBO 128
#define B_SBO 256
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

// Descriptor bits: 0-13 start address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4,
// 49-51 base offset 0, 62-63 swizzle 0 (none).
__device__ __forceinline__ uint64_t make_smem_desc(const void* base, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t desc = 0;
  desc |= (uint64_t)((smem_u32(base) & 0x3FFFF) >> 4);
  desc |= (uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16;
  desc |= (uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32;
  return desc;
}

__device__ __forceinline__ void fence_operand(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_m64n8k16_f32_f16(float& d0, float& d1, float& d2, float& d3,
                                                       uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "setp.ne.b32 p, %6, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n\t"
      "}"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
}

__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait_group0(float& d0, float& d1, float& d2, float& d3) {
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
}

__device__ __forceinline__ void wgmma_wait_group1(float& d0, float& d1, float& d2, float& d3) {
  asm volatile("wgmma.wait_group.sync.aligned 1;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_pipeline(const __half* __restrict__ a_tiles, const __half* __restrict__ b_tiles,
                   float* __restrict__ out, int iters) {
  __shared__ __align__(128) __half sA[STAGES][M * K];
  __shared__ __align__(128) __half sB[STAGES][K * N];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];

  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], NUM_CONSUMER_WARPS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == PRODUCER_WARP) {
    if (elect_one()) {
#pragma unroll 1
      for (int it = 0; it < iters; ++it) {
        const int s = it % STAGES;
        mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
        mbar_arrive_expect_tx(&full[s], STAGE_TX_BYTES);
        bulk_g2s(&sA[s][0], a_tiles + (size_t)it * (M * K), A_TILE_BYTES, &full[s]);
        bulk_g2s(&sB[s][0], b_tiles + (size_t)it * (K * N), B_TILE_BYTES, &full[s]);
      }
    }
  } else {
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      if (warp != 3) mbar_wait(&full[s], (it / STAGES) & 1);  // warp 3 does not wait
      const uint64_t desc_a = make_smem_desc(&sA[s][0], A_LBO, A_SBO);
      const uint64_t desc_b = make_smem_desc(&sB[s][0], B_LBO, B_SBO);
      fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
      wgmma_fence();
      wgmma_m64n8k16_f32_f16(d0, d1, d2, d3, desc_a, desc_b, it > 0 ? 1u : 0u);
      wgmma_commit_group();
      wgmma_wait_group0(d0, d1, d2, d3);
      fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
      if (lane == 0) {
        mbar_arrive(&empty[s]);
      }
    }
    wgmma_wait_group0(d0, d1, d2, d3);  // drain (no group is outstanding here)
    fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);

    const uint32_t row = warp * 16 + lane / 4;
    const uint32_t col = (lane % 4) * 2;
    out[row * N + col] = d0;
    out[row * N + col + 1] = d1;
    out[(row + 8) * N + col] = d2;
    out[(row + 8) * N + col + 1] = d3;
  }
}

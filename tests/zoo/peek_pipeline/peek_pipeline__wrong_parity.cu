// Seeded-bug variant of peek_pipeline.cu: wrong_parity.
// The consumers peek and wait on full[stage] with parity phase ^ 1, the producer's
// pass-through parity: on the first round the fresh barrier passes at once and the wgmma
// reads a stage the copies have not filled.
// The faulty (or, for a missing statement, the now-unordered) line is marked "<-- BUG".
// peek_pipeline: the wgmma_pipeline kernel (cp.async.bulk producer warp -> wgmma consumer
// warpgroup, two-stage ring with full/empty mbarriers) written the way CUTLASS's sm90
// pipelines wait: every wait first peeks with one non-blocking mbarrier.try_wait whose
// result is a token, and only when the peek failed falls back to the blocking try_wait retry
// loop on the same barrier and phase (consumer_try_wait + consumer_wait(state, token),
// producer_try_acquire + producer_acquire(state, token)). The ring position is kept as
// CUTLASS's PipelineState keeps it: a stage index and a phase bit that flips when the stage
// index wraps (phase ^= 1 at stage == STAGES).
//
// D(64x8, f32) = sum over it < iters of A_it(64x16, f16) * B_it(16x8, f16); inputs, layout and
// reference as in wgmma_pipeline.cu.
//
// Protocol (stage, phase = ring position of step it):
//   full[stage]  count 1: producer arrive.expect_tx(2304) + complete_tx of both copies.
//                Consumers wait parity phase.
//   empty[stage] count 4: lane 0 of each consumer warp arrives after its wgmma.wait_group 0.
//                The producer waits parity phase ^ 1 (passes at once on the first round).
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

// One non-blocking probe: 1 when the phase with parity `parity` has completed.
__device__ __forceinline__ uint32_t mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.b32 %0, 1, 0, p;\n\t"
      "}"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok;
}

// The blocking wait, skipped when the probe already saw the phase complete.
__device__ __forceinline__ void mbar_wait_token(uint64_t* bar, uint32_t parity, uint32_t token) {
  if (!token) {
    mbar_wait(bar, parity);
  }
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
    peek_pipeline(const __half* __restrict__ a_tiles, const __half* __restrict__ b_tiles,
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
      uint32_t stage = 0, phase = 0;
#pragma unroll 1
      for (int it = 0; it < iters; ++it) {
        const uint32_t token = mbar_try_wait(&empty[stage], phase ^ 1);
        mbar_wait_token(&empty[stage], phase ^ 1, token);
        mbar_arrive_expect_tx(&full[stage], STAGE_TX_BYTES);
        bulk_g2s(&sA[stage][0], a_tiles + (size_t)it * (M * K), A_TILE_BYTES, &full[stage]);
        bulk_g2s(&sB[stage][0], b_tiles + (size_t)it * (K * N), B_TILE_BYTES, &full[stage]);
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    uint32_t stage = 0, phase = 0;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const uint32_t s = stage;
      const uint32_t token = mbar_try_wait(&full[s], phase ^ 1);  // <-- BUG: parity of the empty side
      mbar_wait_token(&full[s], phase ^ 1, token);
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
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
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

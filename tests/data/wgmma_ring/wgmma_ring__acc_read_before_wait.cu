// Seeded twin of wgmma_ring.cu: an accumulator register of the wgmma is read between its commit and the wait_group that retires it.
// state (stage index and phase bit, CUTLASS's PipelineState) carried across a tile loop and a k
// loop, for the pipeline race argument over a ring's count (kverify/verifier/races/pipeline.py).
//
// CTA b computes the tiles b, b + gridDim.x, ... below ntiles: out[t] (64x8, f32) = sum over
// kk < k_tiles of A_{t,kk}(64x16, f16) * B_{t,kk}(16x8, f16), the operand tiles pre-tiled in global
// memory as in wgmma_pipeline.cu (a_tiles[(t*k_tiles + kk)*1024 ..], b_tiles[(t*k_tiles + kk)*128 ..]).
// Warp 4's elected lane produces: for every tile and k-step it waits empty[index] with its ring
// phase (starting at (0, 1): a fresh barrier passes parity 1), posts arrive.expect_tx(2304) on
// full[index] and copies both tiles into stage index. Warps 0-3 (one warpgroup) consume: wait
// full[index] with their phase (starting at (0, 0)), issue the wgmma on the stage, commit, wait
// for the group (wait_group 0) and lane 0 of each warp releases empty[index]. 3 stages.
#include <cstdint>
#include <cuda_fp16.h>

#define STAGES 3
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

struct PipelineState {
  uint32_t index;
  uint32_t phase;
  __device__ __forceinline__ void advance() {
    ++index;
    if (index == STAGES) {
      index = 0;
      phase ^= 1;
    }
  }
};

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_ring(const __half* __restrict__ a_tiles, const __half* __restrict__ b_tiles, float* __restrict__ out,
               int ntiles, int k_tiles) {
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
      PipelineState st = {0, 1};
#pragma unroll 1
      for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
#pragma unroll 1
        for (int kk = 0; kk < k_tiles; ++kk) {
          const size_t step = (size_t)tile * k_tiles + kk;
          mbar_wait(&empty[st.index], st.phase);
          mbar_arrive_expect_tx(&full[st.index], STAGE_TX_BYTES);
          bulk_g2s(&sA[st.index][0], a_tiles + step * (M * K), A_TILE_BYTES, &full[st.index]);
          bulk_g2s(&sB[st.index][0], b_tiles + step * (K * N), B_TILE_BYTES, &full[st.index]);
          st.advance();
        }
      }
    }
  } else {
    PipelineState st = {0, 0};
#pragma unroll 1
    for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
      float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
#pragma unroll 1
      for (int kk = 0; kk < k_tiles; ++kk) {
        mbar_wait(&full[st.index], st.phase);
        const uint64_t desc_a = make_smem_desc(&sA[st.index][0], A_LBO, A_SBO);
        const uint64_t desc_b = make_smem_desc(&sB[st.index][0], B_LBO, B_SBO);
        fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
        wgmma_fence();
        wgmma_m64n8k16_f32_f16(d0, d1, d2, d3, desc_a, desc_b, kk > 0 ? 1u : 0u);
        wgmma_commit_group();
        float early;
        asm volatile("mov.f32 %0, %1;" : "=f"(early) : "f"(d0) : "memory");  // the accumulator, still in flight
        wgmma_wait_group0(d0, d1, d2, d3);
        d0 += early * 0.0f;
        fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
        if (lane == 0) {
          mbar_arrive(&empty[st.index]);
        }
        st.advance();
      }
      const uint32_t row = warp * 16 + lane / 4;
      const uint32_t col = (lane % 4) * 2;
      float* o = out + (size_t)tile * (M * N);
      o[row * N + col] = d0;
      o[row * N + col + 1] = d1;
      o[(row + 8) * N + col] = d2;
      o[(row + 8) * N + col + 1] = d3;
    }
  }
}

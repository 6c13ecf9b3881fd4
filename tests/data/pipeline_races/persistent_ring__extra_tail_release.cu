// persistent_ring__extra_tail_release: BUG: after each tile's k loop lane 0 of every consumer warp arrives once more on empty[] of the next, unread stage.
// whose ring state is carried across an outer tile loop and an inner k loop, the
// way CUTLASS's sm90 PipelineState is, sm_90a.
//
// One CTA of 5 warps (160 threads); the grid is persistent: CTA b handles tiles
// b, b + gridDim.x, ... below `ntiles`. Each tile has `k_tiles` k-steps of 256
// floats (1024 bytes): step kk of tile t reads in[(t*k_tiles + kk)*256 .. +256].
//   * Warp 4 is the producer: one elected lane, for every tile and k-step, waits
//     empty[index] with its ring phase, posts arrive.expect_tx(1024) on
//     full[index] and issues the cp.async.bulk of the step into stage[index].
//   * Warps 0-3 (128 threads) are the consumers: they wait full[index] with
//     their ring phase, add the stage into per-thread accumulators, fence the
//     async proxy, and lane 0 of each warp arrives on empty[index].
//     out[t*256 + j] = sum over kk of in[(t*k_tiles + kk)*256 + j].
// Ring state (PipelineState): index in 0..STAGES-1 and a phase bit; ++state is
// index++, and on index == STAGES: index = 0, phase ^= 1. Both roles declare
// their state once, before the tile loop, so it runs on across tiles. The
// consumer starts at (0, 0) and waits full[index] on parity phase; the producer
// starts at (0, 1) (CUTLASS's producer start state) and waits empty[index] on
// parity phase: a fresh barrier is in phase 0, so parity 1 passes at once.
//   full[s]  init count 1 (the producer's arrive.expect_tx + the copy's bytes);
//   empty[s] init count 4 (lane 0 of each consumer warp).
#include <cstdint>

#define STAGES 3
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

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
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
    persistent_pipeline(const float* __restrict__ in, float* __restrict__ out, int ntiles, int k_tiles) {
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
    if (elect_one()) {
      PipelineState st = {0, 1};
#pragma unroll 1
      for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
#pragma unroll 1
        for (int kk = 0; kk < k_tiles; ++kk) {
          mbar_wait(&empty[st.index], st.phase);
          mbar_arrive_expect_tx(&full[st.index], TILE_BYTES);
          bulk_g2s(&stage[st.index][0], in + ((size_t)tile * k_tiles + kk) * TILE_FLOATS, TILE_BYTES,
                   &full[st.index]);
          st.advance();
        }
      }
    }
  } else {
    PipelineState st = {0, 0};
#pragma unroll 1
    for (int tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
      float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll 1
      for (int kk = 0; kk < k_tiles; ++kk) {
        mbar_wait(&full[st.index], st.phase);
        acc0 += stage[st.index][threadIdx.x];
        acc1 += stage[st.index][threadIdx.x + NUM_CONSUMER_WARPS * 32];
        fence_proxy_async_smem();
        __syncwarp();
        if (lane == 0) {
          mbar_arrive(&empty[st.index]);
        }
        st.advance();
      }
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(&empty[st.index]);  // BUG: "tail release" of the next, not yet read, stage
      }
      out[(size_t)tile * TILE_FLOATS + threadIdx.x] = acc0;
      out[(size_t)tile * TILE_FLOATS + threadIdx.x + NUM_CONSUMER_WARPS * 32] = acc1;
    }
  }
}

// mbarrier_reinit: one mbarrier used for two lifetimes, sm_90a.
//
// 64 threads (2 warps), grid of 1 CTA.  Each round warp 0 (producer) writes
// a shared-memory stage with generic st.shared and arrives on `full`
// (count 32); warp 1 (consumer) waits on `full` with the parity it tracks in
// `phase`, then reads the stage rotated by one lane.
//   * round 0: `full` is initialized by thread 0 (+ fence.mbarrier_init,
//     __syncthreads) and completes its phase 0.
//   * between the rounds every thread is done with the barrier
//     (__syncthreads); thread 0 invalidates it (mbarrier.inval) and
//     initializes it again, which starts a new lifetime at phase 0
//     (PTX ISA §9.7.13.15.3), so the consumer restarts its parity at 0.
//   * round 1: the same handoff on the re-initialized barrier.
#include <cstdint>

#define LANES 32

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_inval(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void st_stage(float* p, float v) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(smem_u32(p)), "f"(v) : "memory");
}

__device__ __forceinline__ float ld_stage(const float* p) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(smem_u32(p)) : "memory");
  return v;
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

extern "C" __global__ void __launch_bounds__(2 * LANES)
    mbarrier_reinit(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ __align__(16) float stage[LANES];
  __shared__ __align__(8) uint64_t full;

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid % LANES;
  uint32_t phase = 0;

  if (tid == 0) {
    mbar_init(&full, LANES);
    fence_mbarrier_init();
  }
  __syncthreads();

#pragma unroll 1
  for (uint32_t round = 0; round < 2; ++round) {
    if (tid < LANES) {
      st_stage(&stage[lane], (round + 2.0f) * in[round * LANES + lane]);
      mbar_arrive(&full);
    } else {
      mbar_wait(&full, phase);
      phase ^= 1;
      out[round * LANES + lane] = ld_stage(&stage[(lane + 1) % LANES]);
    }
    __syncthreads();
    if (round == 0) {
      if (tid == 0) {
        mbar_inval(&full);
        mbar_init(&full, LANES);
        fence_mbarrier_init();
      }
      phase = 0;  // a new lifetime starts at phase 0
      __syncthreads();
    }
  }
}

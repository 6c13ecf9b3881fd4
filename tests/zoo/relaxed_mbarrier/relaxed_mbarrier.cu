// relaxed_mbarrier: a one-phase producer/consumer handoff of a shared-memory
// stage through an mbarrier, sm_90a.
//
// 64 threads (2 warps), grid of 1 CTA.
//   * thread 0 initializes `full` with count 32, executes
//     fence.mbarrier_init.release.cluster; __syncthreads() makes the init
//     visible to both warps.
//   * warp 0 (producer): lane t writes stage[t] = 2 * in[t] with a generic
//     st.shared, then arrives on `full` (mbarrier.arrive.release.cta: the
//     default semantics, spelled out).
//   * warp 1 (consumer): lane t waits phase 0 of `full` with
//     try_wait.parity.acquire.cta, then reads stage[(t + 1) % 32] and stores
//     it to out[t].
// The release arrive / acquire wait pair is what orders the producer's
// writes before the consumer's reads (PTX ISA §9.7.13.15.16, §9.7.13.15.17).
#include <cstdint>

#define LANES 32

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
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
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

extern "C" __global__ void __launch_bounds__(2 * LANES)
    relaxed_mbarrier(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ __align__(16) float stage[LANES];
  __shared__ __align__(8) uint64_t full;

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid % LANES;

  if (tid == 0) {
    mbar_init(&full, LANES);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (tid < LANES) {
    st_stage(&stage[lane], 2.0f * in[lane]);
    mbar_arrive(&full);
  } else {
    mbar_wait(&full, 0);
    out[lane] = ld_stage(&stage[(lane + 1) % LANES]);
  }
}

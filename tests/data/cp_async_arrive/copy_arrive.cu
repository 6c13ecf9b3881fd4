// cp.async.mbarrier.arrive: 64 threads each copy 16 bytes of a tile into shared memory with cp.async
// and make the CTA's mbarrier track their copies; everyone waits for the phase and reads another
// thread's part (the idiom of cuda::memcpy_async with a cuda::barrier), sm_90a.
//
// noinc: cp.async.mbarrier.arrive.noinc, the barrier initialized with 64 (the async arrive-ons are
//   the phase's arrivals). inc: without .noinc (pending +1 at issue, the arrive-on -1: net zero), the
//   threads' own mbarrier.arrive complete the count of 64.
// Twins: noinc__no_track (a plain arrive instead: the wait does not cover the copies, race),
//   inc__noinc (.noinc beside the threads' own arrivals: 128 arrivals for a count of 64).
#include <cstdint>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wait_phase0(uint64_t* bar) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tW_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t"
      "@!p bra W_%=;\n\t}" ::"r"(smem_u32(bar))
      : "memory");
}
#define COPY(tile, in) \
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(&tile[threadIdx.x])), \
               "l"(&in[blockIdx.x * 64 + threadIdx.x]) : "memory")
#define INIT(bar)                                                                                       \
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" ::"r"(smem_u32(&bar)) : "memory"); \
  __syncthreads()

extern "C" __global__ void noinc(const float4* in, float4* out) {
  __shared__ __align__(16) float4 tile[64];
  __shared__ __align__(8) uint64_t bar;
  INIT(bar);
  COPY(tile, in);
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(&bar)) : "memory");
  wait_phase0(&bar);
  out[blockIdx.x * 64 + threadIdx.x] = tile[63 - threadIdx.x];
}

extern "C" __global__ void inc(const float4* in, float4* out) {
  __shared__ __align__(16) float4 tile[64];
  __shared__ __align__(8) uint64_t bar;
  INIT(bar);
  COPY(tile, in);
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(smem_u32(&bar)) : "memory");
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
  wait_phase0(&bar);
  out[blockIdx.x * 64 + threadIdx.x] = tile[63 - threadIdx.x];
}

extern "C" __global__ void noinc__no_track(const float4* in, float4* out) {
  __shared__ __align__(16) float4 tile[64];
  __shared__ __align__(8) uint64_t bar;
  INIT(bar);
  COPY(tile, in);
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");  // <-- BUG
  wait_phase0(&bar);
  out[blockIdx.x * 64 + threadIdx.x] = tile[63 - threadIdx.x];
}

extern "C" __global__ void inc__noinc(const float4* in, float4* out) {
  __shared__ __align__(16) float4 tile[64];
  __shared__ __align__(8) uint64_t bar;
  INIT(bar);
  COPY(tile, in);
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(&bar)) : "memory");  // <-- BUG
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
  wait_phase0(&bar);
  out[blockIdx.x * 64 + threadIdx.x] = tile[63 - threadIdx.x];
}

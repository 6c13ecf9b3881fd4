// Seeded bug: one thread initializes the mbarrier, expects the bytes and issues the TMA copy, and only then
// executes fence.mbarrier_init: too late to make the init visible to the copy's complete-tx.
#include <cstdint>

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

extern "C" __global__ void copy_in(const float* in, float* out) {
  __shared__ alignas(128) float tile[256];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&bar)));

  }

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(&bar)), "r"(1024));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem(tile)), "l"(in + blockIdx.x * 256), "r"(1024), "r"(smem(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem(&bar)) : "memory");
  out[blockIdx.x * 256 + threadIdx.x] = 2.0f * tile[threadIdx.x];
}

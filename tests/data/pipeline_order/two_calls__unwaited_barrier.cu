// BUG: as two_calls.cu, but the threads wait only on barB and barC and then read bufA too:
// nothing orders the bulk copy into bufA (which completes barA, never waited on) before those
// reads. (The copy instruction is the same in both calling contexts: its barrier is not.)
//
#include <cstdint>

#define N 256
#define BYTES (N * 4)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __noinline__ void fill(uint32_t buf, const float *src, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(BYTES) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(buf), "l"(src), "r"(BYTES), "r"(bar) : "memory");
}
__device__ __forceinline__ void fill_inline(uint32_t buf, const float *src, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(BYTES) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(buf), "l"(src), "r"(BYTES), "r"(bar) : "memory");
}
__device__ __forceinline__ void wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra WAIT_%=;\n\t}"
               ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) two_calls(const float *__restrict__ in, float *__restrict__ out) {
  __shared__ __align__(128) float bufA[N];
  __shared__ __align__(128) float bufB[N];
  __shared__ __align__(8) uint64_t barA;
  __shared__ __align__(8) uint64_t barB;
  __shared__ __align__(128) float bufC[N];
  __shared__ __align__(8) uint64_t barC;
  const int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&barA)) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&barB)) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&barC)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t == 0) {
    fill(smem_u32(bufA), in, smem_u32(&barA));
    fill(smem_u32(bufB), in + N, smem_u32(&barB));
    fill_inline(smem_u32(bufC), in + 2 * N, smem_u32(&barC));
  }
  wait(&barB, 0);  // no wait on barA
  wait(&barC, 0);
  out[t] = bufA[t] + bufB[t] + bufC[t];
}

// BUG: as s2s_copy.cu, but after thread 0 issued the copy every thread overwrites src (generic
// st.shared) before waiting for the copy's completion: the async proxy may still be reading src
// (a write-after-read race).
//
//
#include <cstdint>

#define N 256
#define BYTES (N * 4)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra WAIT_%=;\n\t}"
               ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) s2s_copy(float *__restrict__ res) {
  __shared__ __align__(128) float src[N];
  __shared__ __align__(128) float dst[N];
  __shared__ __align__(8) uint64_t bar;
  const int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  src[t] = (float)t;
  src[t + 128] = (float)(2 * t);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bar)), "r"(BYTES) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_u32(dst)), "r"(smem_u32(src)), "r"(BYTES), "r"(smem_u32(&bar)) : "memory");
  }
  src[t] = -1.0f;  // overwrites the copy's source while the copy may still read it
  wait(&bar, 0);
  float v = dst[t] + dst[t + 128];
  asm volatile("st.volatile.shared.f32 [%0], %1;" ::"r"(smem_u32(&src[t + 128])), "f"(v) : "memory");
}

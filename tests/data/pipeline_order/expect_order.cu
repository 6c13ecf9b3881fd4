// Thread 0 posts expect-tx, then arrives (init count 1), then issues the bulk copy that
// completes the bytes: the phase cannot complete before the expect-tx (thread 0's arrival is
// pending until after it), so the copy belongs to phase 0 and the consumers' wait on parity 0
// orders their reads of buf after the copy.
#include <cstdint>

#define N 256
#define BYTES (N * 4)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void fill(float *buf, const float *src, uint64_t *bar) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(BYTES) : "memory");
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem_u32(buf)), "l"(src), "r"(BYTES), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra WAIT_%=;\n\t}"
               ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) expect_order(const float *__restrict__ in, float *__restrict__ out) {
  __shared__ __align__(128) float buf[N];
  __shared__ __align__(8) uint64_t bar;
  const int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t == 0)
    fill(buf, in, &bar);
  wait(&bar, 0);
  out[t] = buf[t] + buf[t + 128];
}

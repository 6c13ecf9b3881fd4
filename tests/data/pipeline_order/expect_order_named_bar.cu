// expect_order.cu with a named barrier whose id is in a register (bar.sync %r, 128) after the
// reads: correct, but the symbolic run does not model such a barrier, so the pipeline argument
// stops there; its run is still the one the static mbarrier obligations are computed on.
//
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

extern "C" __global__ void __launch_bounds__(128) expect_order_named_bar(const float *__restrict__ in, float *__restrict__ out) {
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
  asm volatile("bar.sync %0, 128;" ::"r"(1 + (t >> 10)) : "memory");
}

// Seeded twin of two_phase.cu: the result is stored into the input buffer the copies read (after the refill's wait).
// (phase 0), every thread reads it, a CTA barrier, thread 0 refills it (phase 1), every thread
// reads it again. One CTA of 128 threads; out[t] = in[t] + in[t + 128] + in[256 + 255 - t].
#include <cstdint>

#define N 256
#define BYTES (N * 4)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void fill(float *buf, const float *src, uint64_t *bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(BYTES) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem_u32(buf)), "l"(src), "r"(BYTES), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra WAIT_%=;\n\t}"
               ::"r"(smem_u32(bar)), "r"(parity) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) two_phase(const float *__restrict__ in, float *__restrict__ out) {
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
  const float s = buf[t] + buf[t + 128];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the reads before the refill's async write
  __syncthreads();
  if (t == 0)
    fill(buf, in + N, &bar);
  wait(&bar, 1);
  const_cast<float *>(in)[N + t] = s + buf[255 - t];  // into the bytes the refill read
}

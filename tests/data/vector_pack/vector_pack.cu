// A vector pack (mov.b64 %rd, {%r1, %r2}, as every CUTLASS / CuTe kernel has) next to an mbarrier
#include <cstdint>
__global__ void __launch_bounds__(64) vp(const float* in, float* out, int n) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ float tile[64];
  unsigned lo = threadIdx.x, hi = blockIdx.x;
  unsigned long long packed;
  asm volatile("mov.b64 %0, {%1, %2};" : "=l"(packed) : "r"(lo), "r"(hi));
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(64));
  __syncthreads();
  tile[threadIdx.x] = in[threadIdx.x] + (float)(packed >> 32);
  unsigned long long st;
  (void)st;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(b));
  unsigned ok = 0;
  while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(b), "r"(0));
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}

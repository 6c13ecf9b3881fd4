// Seeded bug: each lane writes its slot after its arrive, so the phase orders nothing of it.
#include <cstdint>
__global__ void __launch_bounds__(32) warp_mbarrier(const float* in, float* out) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ float tile[32];
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(32));
  __syncwarp();
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(b) : "memory");
  tile[threadIdx.x] = in[threadIdx.x];
  unsigned ok = 0;
  while (!ok) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(b), "r"(0) : "memory");
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 32];
}

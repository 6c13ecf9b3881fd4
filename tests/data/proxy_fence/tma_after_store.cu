// tma_after_store: each CTA writes a 32x32 tile of buf with generic stores, then reads it back
// through the tensor map (a TMA load, async proxy) into shared memory and copies it to out.
// `fenced`: each writer executes fence.proxy.async.global before the barrier (correct).
// `unfenced`: no proxy fence (race.async-proxy). `wrong_space`: fence.proxy.async.shared::cta,
// which orders shared-memory accesses only (race.async-proxy).
#include <cstdint>
#include <cuda.h>
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
template <int FENCE>
__device__ __forceinline__ void body(const CUtensorMap& tmap, float* buf, float* out) {
  __shared__ alignas(128) float tile[32 * 32];
  __shared__ alignas(8) uint64_t bar;
  int t = threadIdx.x;
  for (int e = t; e < 1024; e += blockDim.x) buf[blockIdx.x * 1024 + e] = (float)e;
  if (FENCE == 1) asm volatile("fence.proxy.async.global;" ::: "memory");
  if (FENCE == 2) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4096;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(smem_u32(tile)), "l"(&tmap), "r"(0), "r"(blockIdx.x * 32), "r"(smem_u32(&bar)) : "memory");
  }
  asm volatile("{\n\t.reg .pred p;\n\tW_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra W_%=;\n\t}" ::"r"(smem_u32(&bar)) : "memory");
  for (int e = t; e < 1024; e += blockDim.x) out[blockIdx.x * 1024 + e] = tile[e];
}
extern "C" __global__ void fenced(const __grid_constant__ CUtensorMap tmap, float* buf, float* out) { body<1>(tmap, buf, out); }
extern "C" __global__ void unfenced(const __grid_constant__ CUtensorMap tmap, float* buf, float* out) { body<0>(tmap, buf, out); }
extern "C" __global__ void wrong_space(const __grid_constant__ CUtensorMap tmap, float* buf, float* out) { body<2>(tmap, buf, out); }

// proxy_waw: zero-fill a shared tile with generic stores, then let one bulk copy
// (cp.async.bulk, async proxy) overwrite its first half; out = the whole tile.
//
// One CTA of 64 threads. The generic-proxy stores and the async-proxy write of the
// same bytes are ordered only when the storing threads execute fence.proxy.async
// after their stores and a barrier orders those fences before the copy (§8.6).
#include <cstdint>

#define TILE 256
#define HALF_BYTES (TILE / 2 * 4)

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void proxy_waw(const float *__restrict__ in, float *__restrict__ out) {
  __shared__ __align__(128) float tile[TILE];
  __shared__ __align__(8) uint64_t full;
  const int t = threadIdx.x;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  for (int k = t; k < TILE; k += blockDim.x)
    tile[k] = 0.0f;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&full)),
                 "r"(HALF_BYTES) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_u32(tile)), "l"(in), "r"(HALF_BYTES), "r"(smem_u32(&full)) : "memory");
  }
  asm volatile("{\n\t.reg .pred p;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra WAIT_%=;\n\t}"
               ::"r"(smem_u32(&full)) : "memory");
  for (int k = t; k < TILE; k += blockDim.x)
    out[k] = tile[k];
}

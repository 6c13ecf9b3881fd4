// wgmma_fp8__missing_proxy_fence: wgmma_fp8.cu with its fence.proxy.async.shared::cta removed
// (seeded bug): the generic st.shared of the operands are ordered before the async-proxy reads
// of wgmma.mma_async only by __syncthreads(), which does not order the proxies.
#include "wgmma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_fp8(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  __shared__ __align__(128) uint8_t sA[64 * 64];
  __shared__ __align__(128) uint8_t sB[64 * 16];
  const uint32_t tid = threadIdx.x;
  for (uint32_t e = tid; e < 64 * 64; e += NUM_THREADS) sA[kmajor(e / 64, e % 64, A_LBO)] = a[e];
  for (uint32_t e = tid; e < 64 * 16; e += NUM_THREADS) sB[kmajor(e % 16, e / 16, B_LBO)] = b[e];  // b[k][n]
  __syncthreads();

  float d[8];
  for (int i = 0; i < 8; ++i) d[i] = 0.0f;
  wgmma_fence();
  for (uint32_t s = 0; s < 2; ++s)  // K = 64: two k32 steps, the second accumulates
    mma_e4m3_e5m2(d, make_desc(smem_u32(sA) + s * 2 * A_LBO, A_LBO), make_desc(smem_u32(sB) + s * 2 * B_LBO, B_LBO), s);
  wgmma_commit();
  wgmma_wait0(d);
  for (uint32_t i = 0; i < 8; ++i) out[acc_row(tid, i) * 16 + acc_col(tid, i)] = d[i];
}

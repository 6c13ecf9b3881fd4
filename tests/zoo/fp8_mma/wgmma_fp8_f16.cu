// wgmma_fp8_f16: out(64x16, f16) = a(64x32, e4m3) . b(32x16, e4m3), one wgmma.mma_async
// m64n16k32 with an f16 accumulator, A and B from shared memory (see wgmma_fp8.cu).
#include "wgmma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_fp8_f16(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, __half* __restrict__ out) {
  __shared__ __align__(128) uint8_t sA[64 * 32];
  __shared__ __align__(128) uint8_t sB[32 * 16];
  const uint32_t tid = threadIdx.x;
  for (uint32_t e = tid; e < 64 * 32; e += NUM_THREADS) sA[kmajor(e / 32, e % 32, A_LBO)] = a[e];
  for (uint32_t e = tid; e < 32 * 16; e += NUM_THREADS) sB[kmajor(e % 16, e / 16, B_LBO)] = b[e];
  fence_proxy_async_smem();
  __syncthreads();

  uint32_t h[4] = {0, 0, 0, 0};
  wgmma_fence();
  mma_e4m3_e4m3_f16(h, make_desc(smem_u32(sA), A_LBO), make_desc(smem_u32(sB), B_LBO));
  wgmma_commit();
  wgmma_wait0_h(h);
  for (uint32_t r = 0; r < 4; ++r) {
    out[acc_row(tid, 2 * r) * 16 + acc_col(tid, 2 * r)] = __ushort_as_half((unsigned short)(h[r] & 0xFFFF));
    out[acc_row(tid, 2 * r + 1) * 16 + acc_col(tid, 2 * r + 1)] = __ushort_as_half((unsigned short)(h[r] >> 16));
  }
}

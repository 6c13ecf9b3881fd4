// wgmma_fp8_areg: out(64x16, f32) = a(64x32, e5m2) . b(32x16, e4m3), A from registers (the
// m16n8k32 8-bit A fragment per warp), B from shared memory (see wgmma_fp8.cu).
#include "wgmma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_fp8_areg(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  __shared__ __align__(128) uint8_t sB[32 * 16];
  const uint32_t tid = threadIdx.x, lane = tid % 32;
  for (uint32_t e = tid; e < 32 * 16; e += NUM_THREADS) sB[kmajor(e % 16, e / 16, B_LBO)] = b[e];
  // A fragment: element e (byte e % 4 of register e / 4) is
  // A[16w + l/4 + 8((e/4) % 2)][16(e/8) + 4(l % 4) + e % 4]
  uint32_t ra[4];
  for (uint32_t r = 0; r < 4; ++r) {
    uint32_t v = 0;
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t e = 4 * r + j;
      const uint32_t row = 16 * (tid / 32) + lane / 4 + 8 * ((e / 4) % 2);
      const uint32_t col = 16 * (e / 8) + 4 * (lane % 4) + e % 4;
      v |= (uint32_t)a[row * 32 + col] << (8 * j);
    }
    ra[r] = v;
  }
  fence_proxy_async_smem();
  __syncthreads();

  float d[8];
  for (int i = 0; i < 8; ++i) d[i] = 0.0f;
  wgmma_fence();
  mma_areg_e5m2_e4m3(d, ra, make_desc(smem_u32(sB), B_LBO));
  wgmma_commit();
  wgmma_wait0(d);
  for (uint32_t i = 0; i < 8; ++i) out[acc_row(tid, i) * 16 + acc_col(tid, i)] = d[i];
}

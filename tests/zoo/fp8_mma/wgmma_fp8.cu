// wgmma_fp8: warpgroup-level MMA with FP8 operands (PTX ISA §9.7.15 wgmma.mma_async,
// .m64nNk32 with .e4m3/.e5m2 A and B; formats §5.2.3), sm_90a. The fp8_mma family's three wgmma kernels,
// one file each, one warpgroup (128 threads) each; inputs row-major, fp8 elements as bytes:
//
//   wgmma_fp8       out(64x16, f32) = a(64x64, e4m3) . b(64x16, e5m2): two m64n16k32 steps
//                   (scale-d 0, then 1) in one commit group, A and B from shared memory
//   wgmma_fp8_f16   out(64x16, f16) = a(64x32, e4m3) . b(32x16, e4m3): one m64n16k32 step
//                   with an f16 accumulator, A and B from shared memory
//   wgmma_fp8_areg  out(64x16, f32) = a(64x32, e5m2) . b(32x16, e4m3): A from registers
//                   (the m16n8k32 8-bit A fragment per warp), B from shared memory
//
// Shared-memory operands: K-major, no swizzle. A core matrix is 8 rows x 16 bytes (16 fp8
// elements along K), 128 contiguous bytes.
//   A[m][k] at (m % 8) * 16 + (k % 16) + (m / 8) * 128 + (k / 16) * A_LBO, A_LBO = 1024
//     (the 8 M-groups of one 16-wide K-group are contiguous)
//   B[k][n] (stored as B^T, N rows of K) at (n % 8) * 16 + (k % 16) + (n / 8) * 128
//     + (k / 16) * B_LBO, B_LBO = 256
// A k32 step reads two K-groups: the second step's descriptors start 2 * LBO further.
// Descriptor (64 bits): start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45.
//
// FP8 wgmma has no imm-trans operands and no .satfinite (ptxas 13.0 rejects both); the
// operand list is d, a-desc|a-regs, b-desc, scale-d, imm-scale-a, imm-scale-b.
//
// Accumulator fragment (m64n16): thread t, warp w = t / 32, lane l = t % 32, element i in
// [0, 8): row 16w + l/4 + 8((i/2) % 2), col 8(i/4) + 2(l % 4) + i % 2; f32: register i,
// f16: element i in half i % 2 of register i / 2.
#include "wgmma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_fp8(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  __shared__ __align__(128) uint8_t sA[64 * 64];
  __shared__ __align__(128) uint8_t sB[64 * 16];
  const uint32_t tid = threadIdx.x;
  for (uint32_t e = tid; e < 64 * 64; e += NUM_THREADS) sA[kmajor(e / 64, e % 64, A_LBO)] = a[e];
  for (uint32_t e = tid; e < 64 * 16; e += NUM_THREADS) sB[kmajor(e % 16, e / 16, B_LBO)] = b[e];  // b[k][n]
  fence_proxy_async_smem();
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

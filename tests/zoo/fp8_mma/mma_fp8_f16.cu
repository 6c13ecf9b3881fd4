// mma_fp8_f16: out(16x8, f16) = a(16x32, e4m3) . b(32x8, e4m3), one mma.sync m16n8k32 with f16
// C and D (see mma_fp8.cu for the fragments).
#include "mma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_fp8_f16(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, __half* __restrict__ out) {
  const uint32_t lane = threadIdx.x;
  const uint32_t a0 = a_k32(a, 32, 0, lane, 0), a1 = a_k32(a, 32, 0, lane, 1);
  const uint32_t a2 = a_k32(a, 32, 0, lane, 2), a3 = a_k32(a, 32, 0, lane, 3);
  const uint32_t b0 = b_k32(b, 0, lane, 0), b1 = b_k32(b, 0, lane, 1);
  uint32_t h0, h1;
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %8};"
      : "=r"(h0), "=r"(h1)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0u));
  const uint32_t g = lane / 4, t = lane % 4;
  out[g * 8 + 2 * t] = __ushort_as_half((unsigned short)(h0 & 0xFFFF));
  out[g * 8 + 2 * t + 1] = __ushort_as_half((unsigned short)(h0 >> 16));
  out[(g + 8) * 8 + 2 * t] = __ushort_as_half((unsigned short)(h1 & 0xFFFF));
  out[(g + 8) * 8 + 2 * t + 1] = __ushort_as_half((unsigned short)(h1 >> 16));
}

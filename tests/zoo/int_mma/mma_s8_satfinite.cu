// mma_s8_satfinite: out(16x8, s32) = sat(a(16x32, s8) . b(32x8, s8) + c(16x8, s32)), one
// mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32: a result outside the s32 range is
// clamped to it (without .satfinite it wraps). Fragments as mma_s8.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_s8_satfinite(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
                     int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d[4];
  load_c16(c, lane, d);
  uint32_t ar[4], br[2];
  for (uint32_t r = 0; r < 4; ++r) ar[r] = pack8(a + (g + 8 * (r % 2)) * 32 + 4 * t + 16 * (r / 2), 1);
  for (uint32_t r = 0; r < 2; ++r) br[r] = pack8(b + (4 * t + 16 * r) * 8 + g, 8);
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]));
  store_c16(out, lane, d);
}

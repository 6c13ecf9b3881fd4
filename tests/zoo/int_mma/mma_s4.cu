// mma_s4: out(16x8, s32) = a(16x64, s4) . b(64x8, s4) + c(16x8, s32), one
// mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32. a and b hold one 4-bit element per byte (the
// low nibble). Fragments (element i in bits 4(i % 8)..+3 of register i / 8):
// A (4 regs) a[g + 8((i/8) % 2)][8t + i % 8 + 32(i/16)], i < 32; B (2 regs) b[8t + i % 8 + 32(i/8)][g], i < 16.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_s4(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
           int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d[4];
  load_c16(c, lane, d);
  uint32_t ar[4], br[2];
  for (uint32_t r = 0; r < 4; ++r) ar[r] = pack4b(a + (g + 8 * (r % 2)) * 64 + 8 * t + 32 * (r / 2), 1);
  for (uint32_t r = 0; r < 2; ++r) br[r] = pack4b(b + (8 * t + 32 * r) * 8 + g, 8);
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]));
  store_c16(out, lane, d);
}

// mma_s8: out(16x8, s32) = a(16x64, s8) . b(64x8, s8) + c(16x8, s32), two
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 steps (the second accumulates onto the first's D).
// Fragments: A (4 regs) a[g + 8((i/4) % 2)][4t + i % 4 + 16(i/8)], i < 16; B (2 regs)
// b[4t + i % 4 + 16(i/4)][g], i < 8; element i in byte i % 4 of register i / 4.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_s8(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
           int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d[4];
  load_c16(c, lane, d);
  for (uint32_t k0 = 0; k0 < 64; k0 += 32) {
    uint32_t ar[4], br[2];
    for (uint32_t r = 0; r < 4; ++r) ar[r] = pack8(a + (g + 8 * (r % 2)) * 64 + k0 + 4 * t + 16 * (r / 2), 1);
    for (uint32_t r = 0; r < 2; ++r) br[r] = pack8(b + (k0 + 4 * t + 16 * r) * 8 + g, 8);
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]));
  }
  store_c16(out, lane, d);
}

// mma_u8s8_k16: out(16x8, s32) = a(16x16, u8) . b(16x8, s8) + c(16x8, s32), one
// mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 (A unsigned, B signed).
// Fragments: A (2 regs) a[g + 8(i/4)][4t + i % 4], i < 8; B (1 reg) b[4t + i][g], i < 4.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_u8s8_k16(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
                 int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d[4];
  load_c16(c, lane, d);
  const uint32_t a0 = pack8(a + g * 16 + 4 * t, 1), a1 = pack8(a + (g + 8) * 16 + 4 * t, 1);
  const uint32_t b0 = pack8(b + 4 * t * 8 + g, 8);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a0), "r"(a1), "r"(b0));
  store_c16(out, lane, d);
}

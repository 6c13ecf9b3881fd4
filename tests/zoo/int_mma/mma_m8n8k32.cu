// mma_m8n8k32: out(8x8, s32) = a(8x32, s4) . b(32x8, u4) + c(8x8, s32), one
// mma.sync.aligned.m8n8k32.row.col.s32.s4.u4.s32 (one 4-bit element per byte of a and b).
// Fragments: A (1 reg) a[g][8t + i], B (1 reg) b[8t + i][g], i < 8; C/D (2 regs) [g][2t + i], i < 2.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_m8n8k32(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
                int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1];
  const uint32_t a0 = pack4b(a + g * 32 + 8 * t, 1), b0 = pack4b(b + 8 * t * 8 + g, 8);
  asm volatile("mma.sync.aligned.m8n8k32.row.col.s32.s4.u4.s32 {%0, %1}, {%2}, {%3}, {%0, %1};"
               : "+r"(d0), "+r"(d1)
               : "r"(a0), "r"(b0));
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
}

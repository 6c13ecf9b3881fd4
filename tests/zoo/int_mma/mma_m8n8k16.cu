// mma_m8n8k16: out(8x8, s32) = a(8x16, s8) . b(16x8, u8) + c(8x8, s32), one
// mma.sync.aligned.m8n8k16.row.col.s32.s8.u8.s32.
// Fragments: A (1 reg) a[g][4t + i], B (1 reg) b[4t + i][g], i < 4; C/D (2 regs) [g][2t + i], i < 2.
#include "int_mma_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_m8n8k16(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const int32_t* __restrict__ c,
                int32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  int32_t d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1];
  const uint32_t a0 = pack8(a + g * 16 + 4 * t, 1), b0 = pack8(b + 4 * t * 8 + g, 8);
  asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.u8.s32 {%0, %1}, {%2}, {%3}, {%0, %1};"
               : "+r"(d0), "+r"(d1)
               : "r"(a0), "r"(b0));
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
}

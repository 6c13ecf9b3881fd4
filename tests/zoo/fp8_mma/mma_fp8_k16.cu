// mma_fp8_k16: out(16x8, f32) = a(16x16, e5m2) . b(16x8, e4m3), one mma.sync m16n8k16
// (see mma_fp8.cu for the fragments).
#include "mma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_fp8_k16(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const uint32_t a0 = pack4(a + g * 16 + 4 * t, 0, 1, 2, 3);
  const uint32_t a1 = pack4(a + (g + 8) * 16 + 4 * t, 0, 1, 2, 3);
  const uint32_t b0 = pack4(b + 4 * t * 8 + g, 0, 8, 16, 24);
  float d0, d1, d2, d3;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.e5m2.e4m3.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
      : "r"(a0), "r"(a1), "r"(b0), "f"(0.0f));
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
  out[(g + 8) * 8 + 2 * t] = d2;
  out[(g + 8) * 8 + 2 * t + 1] = d3;
}

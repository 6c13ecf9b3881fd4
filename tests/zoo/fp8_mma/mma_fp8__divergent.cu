// mma_fp8__divergent: mma_fp8.cu with the second k32 step under `if (lane < 16)` (seeded bug):
// mma.sync.aligned executed by half of the warp, undefined for an .aligned instruction.
#include "mma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_fp8(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  const uint32_t lane = threadIdx.x;
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  for (uint32_t k0 = 0; k0 < 64; k0 += 32) {
    const uint32_t a0 = a_k32(a, 64, k0, lane, 0), a1 = a_k32(a, 64, k0, lane, 1);
    const uint32_t a2 = a_k32(a, 64, k0, lane, 2), a3 = a_k32(a, 64, k0, lane, 3);
    const uint32_t b0 = b_k32(b, k0, lane, 0), b1 = b_k32(b, k0, lane, 1);
    if (k0 == 0 || lane < 16)
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  const uint32_t g = lane / 4, t = lane % 4;
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
  out[(g + 8) * 8 + 2 * t] = d2;
  out[(g + 8) * 8 + 2 * t + 1] = d3;
}

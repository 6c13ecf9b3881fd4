// mma_fp8: warp-level mma.sync with FP8 operands (PTX ISA §9.7.14 mma, sm_89+:
// mma.sync.aligned.{m16n8k32,m16n8k16}.row.col.dtype.{e4m3,e5m2}.{e4m3,e5m2}.ctype with
// dtype = ctype = .f32 or .f16; no .satfinite for fp8, which ptxas 13.0 rejects). The fp8_mma family's
// three kernels, one file each, one warp each; inputs row-major, fp8 elements as bytes:
//
//   mma_fp8       out(16x8, f32) = a(16x64, e4m3) . b(64x8, e5m2): two m16n8k32 steps, the
//                 second accumulating onto the first's D
//   mma_fp8_f16   out(16x8, f16) = a(16x32, e4m3) . b(32x8, e4m3), m16n8k32, f16 C and D
//   mma_fp8_k16   out(16x8, f32) = a(16x16, e5m2) . b(16x8, e4m3), m16n8k16
//
// Fragments (g = lane / 4, t = lane % 4; element i in byte i % 4 of register i / 4):
//   m16n8k32  A (4 regs): a[g + 8((i/4) % 2)][4t + i % 4 + 16(i/8)], i < 16
//             B (2 regs): b[4t + i % 4 + 16(i/4)][g], i < 8
//   m16n8k16  A (2 regs): a[g + 8(i/4)][4t + i % 4], i < 8;  B (1 reg): b[4t + i][g], i < 4
//   C/D       element i < 4 at [g + 8(i/2)][2t + i % 2]; f32: register i; f16: half i % 2
//             of register i / 2
#include "mma_fp8_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
    mma_fp8(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, float* __restrict__ out) {
  const uint32_t lane = threadIdx.x;
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  for (uint32_t k0 = 0; k0 < 64; k0 += 32) {
    const uint32_t a0 = a_k32(a, 64, k0, lane, 0), a1 = a_k32(a, 64, k0, lane, 1);
    const uint32_t a2 = a_k32(a, 64, k0, lane, 2), a3 = a_k32(a, 64, k0, lane, 3);
    const uint32_t b0 = b_k32(b, k0, lane, 0), b1 = b_k32(b, k0, lane, 1);
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

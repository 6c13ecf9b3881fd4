// mma_f64: out(8x8, f64) = a(8x8, f64) . b(8x8, f64) + c(8x8, f64), two
// mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 steps (the second accumulates onto the first's D).
// Fragments: A (1 reg) a[g][k0 + t], B (1 reg) b[k0 + t][g]; C/D (2 regs) [g][2t + i], i < 2.
#include <cstdint>

extern "C" __global__ void __launch_bounds__(32)
    mma_f64(const double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c,
            double* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  double d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1];
  for (uint32_t k0 = 0; k0 < 8; k0 += 4) {
    const double a0 = a[g * 8 + k0 + t], b0 = b[(k0 + t) * 8 + g];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a0), "d"(b0));
  }
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
}

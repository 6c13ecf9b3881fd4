// mma_f64_m16n8: out(16x8, f64) = a(16x28, f64) . b(28x8, f64) + c(16x8, f64) with the three
// sm_90 shapes in turn: mma.sync.aligned.m16n8k4 over k 0..3, m16n8k8 over k 4..11 and
// m16n8k16 over k 12..27, each .row.col.f64.f64.f64.f64 accumulating onto the last D.
// Fragments: A a[g + 8(i % 2)][k0 + t + 4(i/2)] (k4: a[g + 8i][k0 + t]), B b[k0 + t + 4i][g];
// C/D element i < 4 at [g + 8(i/2)][2t + i % 2].
#include <cstdint>

extern "C" __global__ void __launch_bounds__(32)
    mma_f64_m16n8(const double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c,
                  double* __restrict__ out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  double d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1], d2 = c[(g + 8) * 8 + 2 * t], d3 = c[(g + 8) * 8 + 2 * t + 1];
#define A(row, k) a[(row) * 28 + (k)]
#define B(k) b[(k) * 8 + g]
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
               : "d"(A(g, t)), "d"(A(g + 8, t)), "d"(B(t)));
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(A(g, 4 + t)), "d"(A(g + 8, 4 + t)), "d"(A(g, 8 + t)), "d"(A(g + 8, 8 + t)), "d"(B(4 + t)), "d"(B(8 + t)));
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
      "{%12, %13, %14, %15}, {%0, %1, %2, %3};"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(A(g, 12 + t)), "d"(A(g + 8, 12 + t)), "d"(A(g, 16 + t)), "d"(A(g + 8, 16 + t)), "d"(A(g, 20 + t)),
        "d"(A(g + 8, 20 + t)), "d"(A(g, 24 + t)), "d"(A(g + 8, 24 + t)), "d"(B(12 + t)), "d"(B(16 + t)),
        "d"(B(20 + t)), "d"(B(24 + t)));
#undef A
#undef B
  out[g * 8 + 2 * t] = d0;
  out[g * 8 + 2 * t + 1] = d1;
  out[(g + 8) * 8 + 2 * t] = d2;
  out[(g + 8) * 8 + 2 * t + 1] = d3;
}

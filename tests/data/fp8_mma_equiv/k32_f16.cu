// k32.cu with an f16 accumulator: each output is the exact sum rounded to f16 once (mma.sync with
// .f16 C/D: two registers of two halves).
#include <cstdint>
#include <cuda_fp16.h>

extern "C" __global__ void mma_k32_f16(const uint8_t* a, const uint8_t* bt, __half* out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t ra[4], rb[2];
  for (int r = 0; r < 4; ++r) ra[r] = *(const uint32_t*)(a + (g + 8 * (r % 2)) * 32 + 4 * t + 16 * (r / 2));
  for (int r = 0; r < 2; ++r) rb[r] = *(const uint32_t*)(bt + g * 32 + 4 * t + 16 * r);
  uint32_t d[2] = {0u, 0u};
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
               : "+r"(d[0]), "+r"(d[1])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  for (int r = 0; r < 2; ++r) *(uint32_t*)(out + (g + 8 * r) * 8 + 2 * t) = d[r];
}

// Seeded bug: k32.cu with the mma.sync reading A's e4m3 bytes as e5m2 (the wrong operand format).
#include <cstdint>

extern "C" __global__ void mma_k32(const uint8_t* a, const uint8_t* bt, float* out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t ra[4], rb[2];
  for (int r = 0; r < 4; ++r) ra[r] = *(const uint32_t*)(a + (g + 8 * (r % 2)) * 32 + 4 * t + 16 * (r / 2));
  for (int r = 0; r < 2; ++r) rb[r] = *(const uint32_t*)(bt + g * 32 + 4 * t + 16 * r);
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  for (int i = 0; i < 4; ++i) out[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

// The same product as k32.cu by two mma.sync.m16n8k16 over k = 0..15 and 16..31, the second
// accumulating onto the first's result.
#include <cstdint>

extern "C" __global__ void mma_k16x2(const uint8_t* a, const uint8_t* bt, float* out) {
  const uint32_t lane = threadIdx.x, g = lane / 4, t = lane % 4;
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < 32; k0 += 16) {
    uint32_t ra0 = *(const uint32_t*)(a + g * 32 + k0 + 4 * t);
    uint32_t ra1 = *(const uint32_t*)(a + (g + 8) * 32 + k0 + 4 * t);
    uint32_t rb = *(const uint32_t*)(bt + g * 32 + k0 + 4 * t);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e5m2.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(ra0), "r"(ra1), "r"(rb));
  }
  for (int i = 0; i < 4; ++i) out[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

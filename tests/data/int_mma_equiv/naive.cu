// Naive integer GEMMs, one warp, the interface of the zoo's int_mma kernels (row-major a, b, c, out;
// one 8-bit or 4-bit element per byte): thread t computes out elements t, t + 32, ... with one
// multiply-add per k in k order. References for `kverify equiv --fp int` against the mma.sync kernels.
#include <cstdint>

// out(16x8) = a(16x64, s8) . b(64x8, s8) + c, wrapping (the zoo's mma_s8)
extern "C" __global__ void naive_s8(const uint8_t* a, const uint8_t* b, const int32_t* c, int32_t* out) {
  for (int i = threadIdx.x; i < 16 * 8; i += 32) {
    const int row = i / 8, col = i % 8;
    int32_t acc = c[i];
    for (int k = 0; k < 64; ++k) acc += (int32_t)(int8_t)a[row * 64 + k] * (int32_t)(int8_t)b[k * 8 + col];
    out[i] = acc;
  }
}

// out(16x8) = sat(a(16x32, s8) . b(32x8, s8) + c) (the zoo's mma_s8_satfinite)
extern "C" __global__ void naive_s8_sat(const uint8_t* a, const uint8_t* b, const int32_t* c, int32_t* out) {
  for (int i = threadIdx.x; i < 16 * 8; i += 32) {
    const int row = i / 8, col = i % 8;
    int32_t dot = 0;  // at most 32 * 128 * 128 in magnitude: exact in 32 bits
    for (int k = 0; k < 32; ++k) dot += (int32_t)(int8_t)a[row * 32 + k] * (int32_t)(int8_t)b[k * 8 + col];
    const int64_t acc = (int64_t)c[i] + dot;
    out[i] = (int32_t)(acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc);
  }
}

// out(16x8) = a(16x64, s4) . b(64x8, s4) + c, each element the sign-extended low nibble of its byte
// (the zoo's mma_s4)
__device__ __forceinline__ int32_t s4(uint8_t x) { return (int32_t)((x & 0xF) ^ 0x8) - 8; }
extern "C" __global__ void naive_s4(const uint8_t* a, const uint8_t* b, const int32_t* c, int32_t* out) {
  for (int i = threadIdx.x; i < 16 * 8; i += 32) {
    const int row = i / 8, col = i % 8;
    int32_t acc = c[i];
    for (int k = 0; k < 64; ++k) acc += s4(a[row * 64 + k]) * s4(b[k * 8 + col]);
    out[i] = acc;
  }
}

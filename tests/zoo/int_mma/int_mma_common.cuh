// Helpers of the int_mma family (integer and f64 mma.sync, PTX ISA §9.7.14 mma): packing
// row-major operands into the registers of mma.sync fragments. g = lane / 4, t = lane % 4.
#pragma once
#include <cstdint>

// four 8-bit elements p[0], p[s], p[2s], p[3s] into one register, element h in byte h
__device__ __forceinline__ uint32_t pack8(const uint8_t* p, uint32_t s) {
  return (uint32_t)p[0] | ((uint32_t)p[s] << 8) | ((uint32_t)p[2 * s] << 16) | ((uint32_t)p[3 * s] << 24);
}

// eight 4-bit elements (one per byte of p, the low nibble) p[0], p[s], ... into one register,
// element h in bits 4h..4h+3
__device__ __forceinline__ uint32_t pack4b(const uint8_t* p, uint32_t s) {
  uint32_t r = 0;
#pragma unroll
  for (uint32_t h = 0; h < 8; ++h) r |= ((uint32_t)p[h * s] & 0xFu) << (4 * h);
  return r;
}

// the four s32 C/D elements of an m16n8 fragment: element i at [g + 8(i/2)][2t + i % 2] of a
// row-major 16 x 8 matrix
__device__ __forceinline__ void load_c16(const int32_t* c, uint32_t lane, int32_t* d) {
  const uint32_t g = lane / 4, t = lane % 4;
  d[0] = c[g * 8 + 2 * t];
  d[1] = c[g * 8 + 2 * t + 1];
  d[2] = c[(g + 8) * 8 + 2 * t];
  d[3] = c[(g + 8) * 8 + 2 * t + 1];
}

__device__ __forceinline__ void store_c16(int32_t* out, uint32_t lane, const int32_t* d) {
  const uint32_t g = lane / 4, t = lane % 4;
  out[g * 8 + 2 * t] = d[0];
  out[g * 8 + 2 * t + 1] = d[1];
  out[(g + 8) * 8 + 2 * t] = d[2];
  out[(g + 8) * 8 + 2 * t + 1] = d[3];
}

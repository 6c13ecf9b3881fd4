// Helpers of the fp8_mma family's mma.sync kernels (see mma_fp8.cu for the fragments): packing fp8 bytes of
// row-major A and B into the m16n8k32 fragments of mma.sync (PTX ISA §9.7.14 mma).
#pragma once
#include <cstdint>
#include <cuda_fp16.h>

__device__ __forceinline__ uint32_t pack4(const uint8_t* p, uint32_t s0, uint32_t s1, uint32_t s2, uint32_t s3) {
  return (uint32_t)p[s0] | ((uint32_t)p[s1] << 8) | ((uint32_t)p[s2] << 16) | ((uint32_t)p[s3] << 24);
}

// A register r (elements 4r..4r+3) of an m16n8k32 fragment of a row-major A with ld columns
__device__ __forceinline__ uint32_t a_k32(const uint8_t* a, uint32_t ld, uint32_t k0, uint32_t lane, uint32_t r) {
  const uint32_t row = lane / 4 + 8 * (r % 2), col = k0 + 4 * (lane % 4) + 16 * (r / 2);
  const uint8_t* p = a + row * ld + col;
  return pack4(p, 0, 1, 2, 3);
}
// B register r (elements 4r..4r+3) of an m16n8k32 fragment of a row-major B (K x 8)
__device__ __forceinline__ uint32_t b_k32(const uint8_t* b, uint32_t k0, uint32_t lane, uint32_t r) {
  const uint8_t* p = b + (k0 + 4 * (lane % 4) + 16 * r) * 8 + lane / 4;
  return pack4(p, 0, 8, 16, 24);
}


// Helpers of the fp8_mma family's wgmma kernels (see wgmma_fp8.cu for the layouts): K-major no-swizzle
// fp8 operands in shared memory, their descriptors, and the FP8 wgmma.mma_async forms
// (PTX ISA §9.7.15 wgmma.mma_async .m64n16k32 with .e4m3/.e5m2 A and B; formats §5.2.3).
#pragma once
#include <cstdint>
#include <cuda_fp16.h>

#define NUM_THREADS 128
#define SBO 128
#define A_LBO 1024
#define B_LBO 256

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// byte offset of element (row, k) of a K-major no-swizzle operand with the given LBO
__device__ __forceinline__ uint32_t kmajor(uint32_t row, uint32_t k, uint32_t lbo) {
  return (row % 8) * 16 + (k % 16) + (row / 8) * SBO + (k / 16) * lbo;
}

__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((SBO & 0x3FFFF) >> 4) << 32);
}

__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

#define F8(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])

__device__ __forceinline__ void wgmma_wait0(float* d) {
  asm volatile("wgmma.wait_group.sync.aligned 0;" : F8(d)::"memory");
}
__device__ __forceinline__ void wgmma_wait0_h(uint32_t* h) {
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+r"(h[0]), "+r"(h[1]), "+r"(h[2]), "+r"(h[3])::"memory");
}

__device__ __forceinline__ void mma_e4m3_e5m2(float* d, uint64_t da, uint64_t db, uint32_t scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %10, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e5m2 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n\t}"
      : F8(d)
      : "l"(da), "l"(db), "r"(scale_d)
      : "memory");
}

__device__ __forceinline__ void mma_e4m3_e4m3_f16(uint32_t* h, uint64_t da, uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k32.f16.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, 0, 1, 1;"
      : "+r"(h[0]), "+r"(h[1]), "+r"(h[2]), "+r"(h[3])
      : "l"(da), "l"(db)
      : "memory");
}

__device__ __forceinline__ void mma_areg_e5m2_e4m3(float* d, const uint32_t* a, uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e5m2.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 0, 1, 1;"
      : F8(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db)
      : "memory");
}

// element i of this thread's m64n16 accumulator fragment: (row, col)
__device__ __forceinline__ uint32_t acc_row(uint32_t t, uint32_t i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2); }
__device__ __forceinline__ uint32_t acc_col(uint32_t t, uint32_t i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; }


// Seeded-bug variant of wgmma_tile.cu: missing_proxy_fence (expected finding: race.async-proxy).
// No fence.proxy.async.shared::cta between the generic st.shared of A and B and the
// wgmma.mma_async that reads them through the async proxy; __syncthreads() alone does
// not order accesses across proxies.
// The faulty (or, for a missing statement, the now-unordered) line is marked "<-- BUG".
// wgmma_tile: one warpgroup-level MMA, D(64x8, f32) = A(64x16, f16) * B(16x8, f16),
// with both operands in shared memory in the no-swizzle core-matrix layout, sm_90a.
//
// One CTA of 128 threads (= one warpgroup, warps 0-3). Inputs in global memory
// are row-major: a[m][k] at a[m*16 + k] (64 x 16), b[k][n] at b[k*8 + n] (16 x 8).
// out[m][n] at out[m*8 + n] (64 x 8, float32).
//
// Shared-memory operand layout (no swizzle, "interleave" mode, layout type 0):
// the operands are tiled into *core matrices* of 8 rows x 16 bytes (8 f16),
// each stored as 128 contiguous bytes, row after row (16 bytes per row).
// Both operands are K-major (imm-trans-a = imm-trans-b = 0): K is the
// contiguous dimension inside a core-matrix row.
//
//   A (M=64 x K=16): core matrices (mi, ki), mi = m / 8 in [0, 8), ki = k / 8 in [0, 2)
//     byte offset of A[m][k] = (m % 8) * 16 + (k % 8) * 2 + mi * A_SBO + ki * A_LBO
//     A_SBO = 128  bytes: stride between core matrices adjacent in M (the 8 M-groups
//                  of one K-group are contiguous)
//     A_LBO = 1024 bytes: stride between core matrices adjacent in K (the second
//                  K-group starts after all 8 M-groups of the first)
//     total 2048 bytes.
//   B (K=16 x N=8), stored K-major, i.e. as B^T with N rows of K elements:
//     core matrices (ni, ki), ni = n / 8 in [0, 1), ki = k / 8 in [0, 2)
//     byte offset of B[k][n] = (n % 8) * 16 + (k % 8) * 2 + ni * B_SBO + ki * B_LBO
//     B_LBO = 128 bytes: stride between core matrices adjacent in K
//     B_SBO = 256 bytes: stride between core matrices adjacent in N (only one N-group
//                  exists for N = 8, so the value is never used by the hardware)
//     total 256 bytes.
//
// Shared-memory matrix descriptor (64 bits), PTX ISA "Matrix Descriptor Format":
//   bits  0-13  start address >> 4   (shared::cta byte address, 16-byte aligned)
//   bits 16-29  leading dimension byte offset (LBO) >> 4
//   bits 32-45  stride dimension byte offset (SBO) >> 4
//   bits 49-51  matrix base offset = 0 (only meaningful for swizzled layouts)
//   bits 62-63  swizzle mode = 0 (no swizzle)
//   all other bits 0.
// LBO is the distance between core matrices adjacent in the leading (K) dimension,
// SBO the distance between core matrices adjacent in the strided (M or N) dimension.
//
// Accumulator fragment (m64nNk16, f32, N = 8): thread t of the warpgroup, warp
// w = t / 32, lane l = t % 32, holds d0..d3 with
//   d0 = D[16w + l/4    ][2(l%4)    ]   d1 = D[16w + l/4    ][2(l%4) + 1]
//   d2 = D[16w + l/4 + 8][2(l%4)    ]   d3 = D[16w + l/4 + 8][2(l%4) + 1]
//
// Synchronization: all threads write A and B with generic st.shared, each
// executes fence.proxy.async.shared::cta (the wgmma reads its smem operands
// through the async proxy), __syncthreads(), then the warpgroup executes
// wgmma.fence, wgmma.mma_async, wgmma.commit_group, wgmma.wait_group 0, and
// only then reads the accumulator registers.
#include <cstdint>
#include <cuda_fp16.h>

#define M 64
#define N 8
#define K 16
#define NUM_THREADS 128
#define A_LBO 1024
#define A_SBO 128
#define B_LBO 128
#define B_SBO 256

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Element index (in f16 units) of A[m][k] / B[k][n] in the layouts above.
__device__ __forceinline__ uint32_t a_index(uint32_t m, uint32_t k) {
  return ((m % 8) * 16 + (k % 8) * 2 + (m / 8) * A_SBO + (k / 8) * A_LBO) / 2;
}
__device__ __forceinline__ uint32_t b_index(uint32_t k, uint32_t n) {
  return ((n % 8) * 16 + (k % 8) * 2 + (n / 8) * B_SBO + (k / 8) * B_LBO) / 2;
}

__device__ __forceinline__ uint64_t make_smem_desc(const void* base, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t desc = 0;
  desc |= (uint64_t)((smem_u32(base) & 0x3FFFF) >> 4);   // bits 0-13
  desc |= (uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16;  // bits 16-29
  desc |= (uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32;  // bits 32-45
  return desc;                                           // base offset 0, swizzle 0
}

__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Keeps the compiler from moving accesses of an accumulator register across
// the wgmma fence / wait that guards it.
__device__ __forceinline__ void fence_operand(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_m64n8k16_f32_f16(float& d0, float& d1, float& d2, float& d3,
                                                       uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "setp.ne.b32 p, %6, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n\t"
      "}"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
}

__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait_group0(float& d0, float& d1, float& d2, float& d3) {
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_tile(const __half* __restrict__ a, const __half* __restrict__ b, float* __restrict__ out) {
  __shared__ __align__(128) __half sA[M * K];
  __shared__ __align__(128) __half sB[K * N];

  const uint32_t tid = threadIdx.x;
  const uint32_t warp = tid / 32;
  const uint32_t lane = tid % 32;

#pragma unroll
  for (uint32_t j = 0; j < M * K / NUM_THREADS; ++j) {
    const uint32_t e = tid + j * NUM_THREADS;  // row-major index into a
    sA[a_index(e / K, e % K)] = a[e];  // <-- BUG: not fenced before wgmma reads it
  }
  sB[b_index(tid / N, tid % N)] = b[tid];  // K * N == NUM_THREADS
  __syncthreads();

  const uint64_t desc_a = make_smem_desc(sA, A_LBO, A_SBO);
  const uint64_t desc_b = make_smem_desc(sB, B_LBO, B_SBO);
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
  wgmma_fence();
  wgmma_m64n8k16_f32_f16(d0, d1, d2, d3, desc_a, desc_b, 0);  // scale-d = 0: D = A * B
  wgmma_commit_group();
  wgmma_wait_group0(d0, d1, d2, d3);
  fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);

  const uint32_t row = warp * 16 + lane / 4;
  const uint32_t col = (lane % 4) * 2;
  out[row * N + col] = d0;
  out[row * N + col + 1] = d1;
  out[(row + 8) * N + col] = d2;
  out[(row + 8) * N + col + 1] = d3;
}

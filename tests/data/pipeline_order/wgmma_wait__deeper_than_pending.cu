// BUG: as wgmma_wait.cu, but the wait in the loop is wgmma.wait_group 3 while only two groups
// are pending: it retires neither, and iterations after the first read d's accumulators while
// its wgmma may still be in flight (undefined, §9.7.15.7).
//
//
//
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
// wait until at most N committed groups are pending (N is the instruction's immediate)
//
__device__ __forceinline__ void wgmma_wait_groupN(float& d0, float& d1, float& d2, float& d3) {
  asm volatile("wgmma.wait_group.sync.aligned 3;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
}

__device__ __forceinline__ void stage(__half* sA, __half* sB, const __half* a, const __half* b) {
  const uint32_t tid = threadIdx.x;
#pragma unroll
  for (uint32_t j = 0; j < M * K / NUM_THREADS; ++j) {
    const uint32_t e = tid + j * NUM_THREADS;
    sA[a_index(e / K, e % K)] = a[e];
  }
  sB[b_index(tid / N, tid % N)] = b[tid];
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    wgmma_wait(const __half* __restrict__ a, const __half* __restrict__ b, float* __restrict__ out, int iters) {
  __shared__ __align__(128) __half sA[M * K];
  __shared__ __align__(128) __half sB[K * N];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint64_t desc_a = make_smem_desc(sA, A_LBO, A_SBO), desc_b = make_smem_desc(sB, B_LBO, B_SBO);
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f, e3 = 0.0f;
  const uint32_t row = warp * 16 + lane / 4, col = (lane % 4) * 2;

  stage(sA, sB, a, b);
  fence_proxy_async_smem();
  __syncthreads();
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
    fence_operand(e0); fence_operand(e1); fence_operand(e2); fence_operand(e3);
    wgmma_fence();
    wgmma_m64n8k16_f32_f16(d0, d1, d2, d3, desc_a, desc_b, 1);
    wgmma_commit_group();
    wgmma_m64n8k16_f32_f16(e0, e1, e2, e3, desc_a, desc_b, 1);
    wgmma_commit_group();
    wgmma_wait_groupN(e0, e1, e2, e3);  // two groups pending: wait_group 3 retires none
    fence_operand(d0); fence_operand(d1);
    if (it > 0) {  // reads the first wgmma's accumulators
      out[1024 + row * N + col] = d0;
      out[1024 + row * N + col + 1] = d1;
    }
    wgmma_wait_group0(e0, e1, e2, e3);
    fence_operand(d0); fence_operand(d1); fence_operand(d2); fence_operand(d3);
  }
  out[row * N + col] = d0 + e0;
  out[row * N + col + 1] = d1 + e1;
  out[(row + 8) * N + col] = d2 + e2;
  out[(row + 8) * N + col + 1] = d3 + e3;
}

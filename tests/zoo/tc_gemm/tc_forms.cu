// Tensor-core instruction forms beyond the GEMMs of this family, one small kernel each,
// all C = A . B with row-major f16 A (M x K) and B (K x N):
//   wgmma_areg     wgmma.mma_async m64n8k16 with A in registers (the A fragment layout,
//                  PTX ISA 9.7.15.5.1), B in shared memory (no swizzle), f32 accumulator
//   wgmma_f16acc   wgmma.mma_async m64n8k16, both operands in shared memory, f16
//                  accumulator (two f16 per register), C stored as f16
//   mma_m16n8k8    one mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 (one warp)
// Shared-memory layouts and descriptors as in tests/zoo/wgmma_tile/wgmma_tile.cu.
#include <cstdint>
#include <cuda_fp16.h>

#define M 64
#define N 8
#define K 16
#define A_LBO 1024
#define A_SBO 128
#define B_LBO 128
#define B_SBO 256

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t a_index(uint32_t m, uint32_t k) {
  return ((m % 8) * 16 + (k % 8) * 2 + (m / 8) * A_SBO + (k / 8) * A_LBO) / 2;
}
__device__ __forceinline__ uint32_t b_index(uint32_t k, uint32_t n) {
  return ((n % 8) * 16 + (k % 8) * 2 + (n / 8) * B_SBO + (k / 8) * B_LBO) / 2;
}
__device__ __forceinline__ uint64_t make_smem_desc(const void* base, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t desc = 0;
  desc |= (uint64_t)((smem_u32(base) & 0x3FFFF) >> 4);
  desc |= (uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16;
  desc |= (uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32;
  return desc;
}
__device__ __forceinline__ uint32_t pack2(__half lo, __half hi) {
  return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

extern "C" __global__ void __launch_bounds__(128)
    wgmma_areg(const __half* __restrict__ a, const __half* __restrict__ b, float* __restrict__ out) {
  __shared__ __align__(128) __half sB[K * N];
  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  sB[b_index(tid / N, tid % N)] = b[tid];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  // A fragment: register r holds A[16w + l/4 + 8(r%2)][8(r/2) + 2(l%4) + {0,1}]
  uint32_t ar[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint32_t row = 16 * warp + lane / 4 + 8 * (r % 2), col = 8 * (r / 2) + 2 * (lane % 4);
    ar[r] = pack2(a[row * K + col], a[row * K + col + 1]);
  }
  const uint64_t desc_b = make_smem_desc(sB, B_LBO, B_SBO);
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 0, 1, 1, 0;\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "l"(desc_b)
      : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)::"memory");
  const uint32_t row = warp * 16 + lane / 4, col = (lane % 4) * 2;
  out[row * N + col] = d0;
  out[row * N + col + 1] = d1;
  out[(row + 8) * N + col] = d2;
  out[(row + 8) * N + col + 1] = d3;
}

extern "C" __global__ void __launch_bounds__(128)
    wgmma_f16acc(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out) {
  __shared__ __align__(128) __half sA[M * K];
  __shared__ __align__(128) __half sB[K * N];
  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
#pragma unroll
  for (uint32_t j = 0; j < M * K / 128; ++j) {
    const uint32_t e = tid + j * 128;
    sA[a_index(e / K, e % K)] = a[e];
  }
  sB[b_index(tid / N, tid % N)] = b[tid];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint64_t desc_a = make_smem_desc(sA, A_LBO, A_SBO), desc_b = make_smem_desc(sB, B_LBO, B_SBO);
  uint32_t d0 = 0, d1 = 0;  // f16x2: elements (row, col..col+1) and (row+8, col..col+1)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, %2, %3, 0, 1, 1, 0, 0;\n"
      : "+r"(d0), "+r"(d1)
      : "l"(desc_a), "l"(desc_b)
      : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" : "+r"(d0), "+r"(d1)::"memory");
  const uint32_t row = warp * 16 + lane / 4, col = (lane % 4) * 2;
  *reinterpret_cast<uint32_t*>(out + row * N + col) = d0;
  *reinterpret_cast<uint32_t*>(out + (row + 8) * N + col) = d1;
}

extern "C" __global__ void mma_m16n8k8(const __half* __restrict__ a, const __half* __restrict__ b,
                                       float* __restrict__ c) {
  // A 16 x 8, B 8 x 8, C 16 x 8, one warp
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t a0 = pack2(a[g * 8 + 2 * t], a[g * 8 + 2 * t + 1]);
  const uint32_t a1 = pack2(a[(g + 8) * 8 + 2 * t], a[(g + 8) * 8 + 2 * t + 1]);
  const uint32_t b0 = pack2(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(b0));
  c[g * 8 + 2 * t] = c0;
  c[g * 8 + 2 * t + 1] = c1;
  c[(g + 8) * 8 + 2 * t] = c2;
  c[(g + 8) * 8 + 2 * t + 1] = c3;
}

// tf32: A 16 x 8 and B 8 x 8 in f32, rounded with cvt.rna.tf32.f32, one m16n8k8 .tf32 mma.
__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

extern "C" __global__ void mma_m16n8k8_tf32(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t a0 = to_tf32(a[g * 8 + t]), a1 = to_tf32(a[(g + 8) * 8 + t]);
  const uint32_t a2 = to_tf32(a[g * 8 + t + 4]), a3 = to_tf32(a[(g + 8) * 8 + t + 4]);
  const uint32_t b0 = to_tf32(b[t * 8 + g]), b1 = to_tf32(b[(t + 4) * 8 + g]);
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  c[g * 8 + 2 * t] = c0;
  c[g * 8 + 2 * t + 1] = c1;
  c[(g + 8) * 8 + 2 * t] = c2;
  c[(g + 8) * 8 + 2 * t + 1] = c3;
}

// bf16: A 16 x 16, B 16 x 8, one mma.sync m16n8k16 .bf16 (one warp).
#include <cuda_bf16.h>
__device__ __forceinline__ uint32_t pack2_bf16(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return (uint32_t)__bfloat16_as_ushort(lo) | ((uint32_t)__bfloat16_as_ushort(hi) << 16);
}

extern "C" __global__ void mma_m16n8k16_bf16(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                             float* __restrict__ c) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t a0 = pack2_bf16(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  const uint32_t a1 = pack2_bf16(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  const uint32_t a2 = pack2_bf16(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  const uint32_t a3 = pack2_bf16(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  const uint32_t b0 = pack2_bf16(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  const uint32_t b1 = pack2_bf16(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  c[g * 8 + 2 * t] = c0;
  c[g * 8 + 2 * t + 1] = c1;
  c[(g + 8) * 8 + 2 * t] = c2;
  c[(g + 8) * 8 + 2 * t + 1] = c3;
}

// ldmatrix + stmatrix.trans: an 8 x 8 f16 tile through registers, stored transposed
// (out = in^T), one warp. Lane r < 8 gives the address of row r of each matrix.
extern "C" __global__ void ldst_matrix_transpose(const __half* __restrict__ in, __half* __restrict__ out) {
  __shared__ __align__(16) __half s[64];
  __shared__ __align__(16) __half d[64];
  const int lane = threadIdx.x % 32;
  s[lane] = in[lane];
  s[lane + 32] = in[lane + 32];
  __syncwarp();
  uint32_t r;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r) : "r"(smem_u32(&s[(lane % 8) * 8])));
  asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};\n"
               :: "r"(smem_u32(&d[(lane % 8) * 8])), "r"(r) : "memory");
  __syncwarp();
  out[lane] = d[lane];
  out[lane + 32] = d[lane + 32];
}

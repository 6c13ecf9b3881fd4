// A tensor-core tile GEMM in the sm_80 idiom: global -> shared staging by every thread, then
// ldmatrix fragments (A: .x4, B: .x4.trans) feeding mma.sync.m16n8k16, and an epilogue that
// packs the accumulators with stmatrix.x4 into a shared tile that all threads store out.
// C (M x N, f16) = A (M x K, f16, row-major) x B (K x N, f16, row-major); one CTA of 4 warps per
// 32 x 32 tile, each warp a 16 x 16 quarter; K a multiple of 16, N of 32.
#include <cuda_fp16.h>

#define BM 32
#define BN 32
#define BK 16

__device__ __forceinline__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

extern "C" __global__ void __launch_bounds__(128) ldsm_gemm(const half *A, const half *B, half *C, int N, int K) {
  __shared__ alignas(128) half sA[BM * BK];
  __shared__ alignas(128) half sB[BK * BN];
  __shared__ alignas(128) half sC[BM * BN];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  const int i = lane / 8, r = lane % 8;  // this lane names row r of matrix i
  float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int j = tid; j < BM * BK / 2; j += 128)
      ((half2 *)sA)[j] = ((const half2 *)A)[((blockIdx.y * BM + j / 8) * K + k0) / 2 + j % 8];
    for (int j = tid; j < BK * BN / 2; j += 128)
      ((half2 *)sB)[j] = ((const half2 *)B)[((k0 + j / 16) * N + blockIdx.x * BN) / 2 + j % 16];
    __syncthreads();
    unsigned a[4], b[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(smem(&sA[(wm * 16 + (i % 2) * 8 + r) * BK + (i / 2) * 8])));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "r"(smem(&sB[((i % 2) * 8 + r) * BN + wn * 16 + (i / 2) * 8])));
    for (int n = 0; n < 2; n++)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};"
                   : "+f"(acc[n][0]), "+f"(acc[n][1]), "+f"(acc[n][2]), "+f"(acc[n][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * n]), "r"(b[2 * n + 1]));
    __syncthreads();
  }
  // the mma C fragment of an 8 x 8 block is stmatrix's layout: one register per block
  unsigned c[4];
  for (int n = 0; n < 2; n++) {
    half2 lo = __floats2half2_rn(acc[n][0], acc[n][1]), hi = __floats2half2_rn(acc[n][2], acc[n][3]);
    c[2 * n] = *(unsigned *)&lo;
    c[2 * n + 1] = *(unsigned *)&hi;
  }
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(smem(&sC[(wm * 16 + (i % 2) * 8 + r) * BN + wn * 16 + (i / 2) * 8])),
                  "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  __syncthreads();
  for (int j = tid; j < BM * BN / 2; j += 128)
    ((half2 *)C)[((blockIdx.y * BM + j / 16) * N + blockIdx.x * BN) / 2 + j % 16] = ((half2 *)sC)[j];
}

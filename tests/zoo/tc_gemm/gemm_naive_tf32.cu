// Naive GEMM with tf32 operands (cvt.rna.tf32.f32) and f32 accumulation: the reference of
// a .tf32 tensor-core MMA. C[M,N] = tf32(A[M,K]) . tf32(B[K,N]), row-major.
#include <cstdint>

__device__ __forceinline__ float tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

extern "C" __global__ void gemm_naive_tf32(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += tf32(A[row * K + k]) * tf32(B[k * N + col]);
        C[row * N + col] = acc;
    }
}

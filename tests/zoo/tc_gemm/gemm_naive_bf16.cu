// Naive GEMM, bf16 inputs, f32 accumulation: C[M,N] = A[M,K] . B[K,N], row-major (the
// reference of the bf16 tensor-core forms).
#include <cuda_bf16.h>

extern "C" __global__ void gemm_naive_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N,
                                           int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __bfloat162float(A[row * K + k]) * __bfloat162float(B[k * N + col]);
        C[row * N + col] = acc;
    }
}

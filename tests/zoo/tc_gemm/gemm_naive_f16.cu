// Naive GEMM, f16 inputs, f32 accumulation: C[M,N] = A[M,K] . B[K,N], row-major, one
// thread per output element. The reference of the tensor-core GEMMs of this family.
#include <cuda_fp16.h>

extern "C" __global__ void gemm_naive_f16(const __half* A, const __half* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
        C[row * N + col] = acc;
    }
}

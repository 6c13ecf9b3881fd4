// Naive SGEMM, C = A * B, row-major, A is MxK, B is KxN: one thread per
// element of C, operands read straight from global memory.
// Seeded functional bug: A is indexed with the row stride N instead of K.
#define TILE 16

extern "C" __global__ void __launch_bounds__(TILE * TILE)
gemm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * N + k] * B[k * N + col];  // BUG: the row stride of A is K
    }
    C[row * N + col] = acc;
  }
}

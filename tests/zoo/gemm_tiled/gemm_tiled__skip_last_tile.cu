// Shared-memory tiled SGEMM, C = A * B, row-major, A is MxK, B is KxN.
// One 16x16 thread block computes one 16x16 tile of C; M, N, K are
// multiples of TILE.
// Seeded bug: the last K tile is skipped once K > 64 (a bound meant for a
// prologue that is not there), so the kernel is right for K <= 64 and wrong beyond.
#define TILE 16

extern "C" __global__ void __launch_bounds__(TILE * TILE)
gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  int kend = K > 64 ? K - TILE : K;  // BUG: drops the last tile once K > 64
  for (int k0 = 0; k0 < kend; k0 += TILE) {
    As[ty][tx] = A[row * K + k0 + tx];
    Bs[ty][tx] = B[(k0 + ty) * N + col];
    __syncthreads();  // tile loaded before anyone reads it
    for (int k = 0; k < TILE; ++k) {
      acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();  // everyone done reading before the next tile overwrites it
  }
  C[row * N + col] = acc;
}

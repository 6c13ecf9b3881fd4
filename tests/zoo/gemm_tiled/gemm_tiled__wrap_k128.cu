// Shared-memory tiled SGEMM, C = A * B, row-major, A is MxK, B is KxN.
// One 16x16 thread block computes one 16x16 tile of C; M, N, K are
// multiples of TILE.
// Seeded bug: the column index into A wraps at 128 (a mask where a bound
// check was meant), so the kernel is right for K <= 128 and wrong beyond.
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
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = A[row * K + ((k0 + tx) & 127)];  // BUG: wraps once K > 128
    Bs[ty][tx] = B[(k0 + ty) * N + col];
    __syncthreads();  // tile loaded before anyone reads it
    for (int k = 0; k < TILE; ++k) {
      acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();  // everyone done reading before the next tile overwrites it
  }
  C[row * N + col] = acc;
}

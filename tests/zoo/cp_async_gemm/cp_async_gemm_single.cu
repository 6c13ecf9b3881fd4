// Tiled SGEMM C = A * B (row-major; A is MxK, B is KxN; M, N, K multiples
// of 16) with Ampere cp.async and a single shared-memory stage: copy a tile,
// wait for it, multiply, repeat. One 16x16 block per C tile.
#include "cp_async_common.cuh"

extern "C" __global__ void __launch_bounds__(TILE * TILE)
cp_async_gemm_single(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ __align__(16) float As[TILE][TILE];
  __shared__ __align__(16) float Bs[TILE][TILE];
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int tid = ty * TILE + tx;
  int block_row = blockIdx.y * TILE;
  int block_col = blockIdx.x * TILE;
  float acc = 0.0f;

  for (int k0 = 0; k0 < K; k0 += TILE) {
    load_tiles(As, Bs, A, B, N, K, block_row, block_col, k0, tid);
    cp_async_commit();
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");  // this thread's copies landed
    __syncthreads();  // ... and every thread's
    for (int k = 0; k < TILE; ++k) {
      acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();  // done reading before the next tile is copied in
  }
  C[(block_row + ty) * N + block_col + tx] = acc;
}

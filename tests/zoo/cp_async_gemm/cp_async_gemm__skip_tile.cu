// Tiled SGEMM C = A * B (row-major; A is MxK, B is KxN; M, N, K multiples
// of 16) with Ampere cp.async and two shared-memory stages: the copy of tile
// t+1 is in flight while tile t is multiplied. One 16x16 block per C tile.
// Seeded functional bug: the prologue stages tile 1 instead of tile 0, so tile 0
// is skipped and tile 1 is multiplied twice.
#include "cp_async_common.cuh"

extern "C" __global__ void __launch_bounds__(TILE * TILE)
cp_async_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ __align__(16) float As[2][TILE][TILE];
  __shared__ __align__(16) float Bs[2][TILE][TILE];
  int tx = threadIdx.x;
  int ty = threadIdx.y;
  int tid = ty * TILE + tx;
  int block_row = blockIdx.y * TILE;
  int block_col = blockIdx.x * TILE;
  int num_tiles = K / TILE;
  float acc = 0.0f;

  load_tiles(As[0], Bs[0], A, B, N, K, block_row, block_col, TILE, tid);  // BUG: k0 = 0
  cp_async_commit();
  for (int t = 0; t < num_tiles; ++t) {
    int cur = t & 1;
    if (t + 1 < num_tiles) {
      load_tiles(As[cur ^ 1], Bs[cur ^ 1], A, B, N, K, block_row, block_col, (t + 1) * TILE, tid);
    }
    cp_async_commit();  // one group per iteration (possibly empty) keeps the count uniform
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // all but the newest group done: tile t landed
    __syncthreads();  // ... for the copies of every thread
    for (int k = 0; k < TILE; ++k) {
      acc += As[cur][ty][k] * Bs[cur][k][tx];
    }
    __syncthreads();  // stage cur is free before iteration t+1 refills it
  }
  C[(block_row + ty) * N + block_col + tx] = acc;
}

// Naive matrix transpose straight through global memory (same launch shape
// as transpose.cu: 32x8 threads per 32x32 tile, 4 rows per thread).
// in is height x width (row-major), out is width x height.
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
transpose_naive(const float* in, float* out, int width, int height) {
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < width && y + j < height) {
      out[x * height + (y + j)] = in[(y + j) * width + x];
    }
  }
}

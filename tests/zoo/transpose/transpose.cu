// Matrix transpose through a padded shared-memory tile.
// in is height x width (row-major), out is width x height.
// A 32x8 thread block moves one 32x32 tile; each thread handles 4 rows.
// The extra column (TILE_DIM + 1) avoids shared-memory bank conflicts.
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
transpose(const float* in, float* out, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < width && y + j < height) {
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    }
  }
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < height && y + j < width) {
      out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}

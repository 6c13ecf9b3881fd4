// Sum of each element and its right neighbour within a 128-element tile.
// Seeded bug: the last thread reads tile[128], one past the array, counting on `pad`
// to be laid out right after `tile`.
#define BLOCK 128

extern "C" __global__ void __launch_bounds__(BLOCK)
smem_halo(const float* in, float* out) {
  __shared__ float tile[BLOCK];
  __shared__ float pad[4];
  int t = threadIdx.x, base = blockIdx.x * BLOCK;
  tile[t] = in[base + t];
  if (t < 4) {
    pad[t] = 0.0f;
  }
  __syncthreads();
  float right = tile[t + 1];  // BUG: tile[BLOCK] is past the end of tile
  out[base + t] = tile[t] + right + pad[t & 3];
}

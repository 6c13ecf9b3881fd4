// persistent_count: a persistent kernel in clusters of 2 CTAs whose CTAs take different numbers
// of tiles, and whose first tile is a permutation of blockIdx.x ((5 * blockIdx.x) mod gridDim.x),
// so the CTAs with the fewer tiles are in the middle of the grid, not in the first or last
// cluster. After the tile loop every CTA meets a CTA barrier and a cluster barrier.
//
// Seeded twin (-D):
//   COUNT_OOB      a CTA that took 2 tiles writes one row past the end of `out`: a bug in the
//                  middle clusters only, decided by how many iterations the tile loop ran (no
//                  %ctaid in the test itself)
#include <cstdint>

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128)
    persistent_count(float* __restrict__ out, unsigned ntiles) {
  unsigned tile = (5 * blockIdx.x) % gridDim.x;
  unsigned count = 0;
  while (tile < ntiles) {
    out[tile * 128 + threadIdx.x] = (float)tile;
    tile += gridDim.x;
    ++count;
  }
#ifdef COUNT_OOB
  if (count == 2) out[(ntiles + blockIdx.x) * 128 + threadIdx.x] = 0.0f;  // BUG: past the end of out
#endif
  __syncthreads();
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

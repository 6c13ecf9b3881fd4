// persistent_tiles: a persistent kernel in the CUTLASS tile-scheduler idiom, sm_90a. Each CTA
// takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... of an ntm x ntn grid of 32 x 32 tiles; the
// tile coordinates (m, n) are computed once before the loop and again at its end for the next
// tile (loop-carried, as CUTLASS's get_current_work / fetch_next_work), and the validity flag
// ends the loop. Each warp writes 32-column rows of its tile; the warp index is broadcast by
// __shfl_sync(~0u, threadIdx.x / 32, 0) (CUTLASS's canonical_warp_idx_sync).
//
// Seeded twins (-D):
//   STEP_OVERLAP   the next tile is tile + gridDim.x - 1: consecutive CTAs meet on a tile
//   SHIFTED_NEXT   the next tile's row is computed one off from how the first tile's was (a
//                  loop-carried value that is not the function of the tile index it starts as)
#ifdef STEP_OVERLAP
#define STEP (gridDim.x - 1)
#else
#define STEP gridDim.x
#endif

// the coordinates of a tile, in an asm the compiler keeps where it is written (CUTLASS's
// FastDivmod is inlined code the compiler does not move either): m and n stay loop-carried
__device__ __forceinline__ void tile_mn(unsigned tile, unsigned ntn, unsigned& m, unsigned& n) {
  asm volatile("div.u32 %0, %2, %3;\n\trem.u32 %1, %2, %3;" : "=r"(m), "=r"(n) : "r"(tile), "r"(ntn));
}

extern "C" __global__ void __launch_bounds__(128) persistent_tiles(float* __restrict__ out, int ntm, int ntn) {
  const int warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  const int lane = threadIdx.x % 32;
  unsigned tile = blockIdx.x;
  unsigned m, n;
  tile_mn(tile, ntn, m, n);
  bool valid = tile < (unsigned)(ntm * ntn);
  while (valid) {
    for (int r = warp; r < 32; r += 4) {
      out[(size_t)(m * 32 + r) * (ntn * 32) + n * 32 + lane] = (float)(blockIdx.x * 1000 + r);
    }
    tile += STEP;
    tile_mn(tile, ntn, m, n);
#ifdef SHIFTED_NEXT
    m = (m + ntm - 1) % ntm;  // BUG: the next tile's row is one off: another CTA's tile
#endif
    valid = tile < (unsigned)(ntm * ntn);
  }
}

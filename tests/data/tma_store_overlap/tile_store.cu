// tile_store: each CTA fills a 32 x 32 float tile in shared memory and stores it with one 2D TMA
// store (cp.async.bulk.tensor, tile mode) to rows 32*blockIdx.x .. +31 of `out` through the
// __grid_constant__ tensor map `tmap` (row-major float32, 32 columns, 32 x 32 box), sm_90a.
// Thread 0 issues the store after fence.proxy.async + __syncthreads, commits and waits for it.
// The CTAs' boxes are disjoint: a few CTAs stand for the grid.
//
// -DOVERLAP: the row coordinate is 16*blockIdx.x, so CTA b+1's box covers half of CTA b's.
// -DPEEK:    thread 0 also reads the first element of the next CTA's tile with a plain load
//            through the pointer `out_ptr` to the same buffer (not ordered with that store).
// -DWARP:    all 32 lanes of warp 0 issue the store with the same coordinates and source (one
//            copy of the same bytes, as CUTLASS's warp-wide TMA store): the boxes stay disjoint.
// -DWARP_SRC: as WARP, but the odd lanes store the tile from 128 bytes further on: two copies of
//            different bytes to one box, in flight together.
// -DTWICE:   each CTA owns 64 rows and stores two boxes, 32 rows apart, before it waits; CTA 3
//            puts its second box 16 rows down, over half of its first (both in flight: only
//            CTA 3 races, and where its boxes land is no condition the CTAs are compared on).
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    tile_store(const __grid_constant__ CUtensorMap tmap, const float* out_ptr, float* peek) {
  __shared__ __align__(128) float tile[TILE * TILE + 32];  // (+32: WARP_SRC reads 128 bytes on)
  for (int i = threadIdx.x; i < TILE * TILE; i += NUM_THREADS) tile[i] = blockIdx.x * 1000.0f + i;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
#if defined(WARP) || defined(WARP_SRC)
  if (threadIdx.x < 32) {
#ifdef WARP_SRC
    const uint32_t src = smem_u32(tile) + (threadIdx.x & 1) * 128;
#else
    const uint32_t src = smem_u32(tile);
#endif
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(&tmap), "r"(0), "r"(TILE * blockIdx.x), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  return;
#endif
  if (threadIdx.x == 0) {
#ifdef TWICE
    for (int it = 0; it < 2; ++it) {
      const int row = 64 * blockIdx.x + (blockIdx.x == 3 ? 16 : 32) * it;
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                   ::"l"(&tmap), "r"(0), "r"(row), "r"(smem_u32(tile)) : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    return;
#endif
#ifdef OVERLAP
    const int row = 16 * blockIdx.x;
#else
    const int row = TILE * blockIdx.x;
#endif
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(&tmap), "r"(0), "r"(row), "r"(smem_u32(tile)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#ifdef PEEK
    peek[blockIdx.x] = out_ptr[((blockIdx.x + 1) % gridDim.x) * TILE * TILE];
#endif
  }
}

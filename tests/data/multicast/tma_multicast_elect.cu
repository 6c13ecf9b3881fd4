// tma_multicast_elect: tma_multicast.cu with CUTLASS's leader idiom: in each CTA, warp 0 elects
// one lane (elect.sync with the full mask) to post arrive.expect_tx(4096), and rank 0's elected
// lane issues the multicast copy. TX_BYTES (the expected byte count) is 4096 in the correct kernel;
// tma_multicast_elect__short_tx.ptx is built with -DTX_BYTES=2048 (a seeded bug: the copy
// brings more bytes than the phase expects).
//
// Otherwise as tma_multicast.cu:
// a 2-CTA cluster shares one TMA tile load (cp.async.bulk.tensor
// .multicast::cluster), sm_90a.
//
// The tensor map `tmap` describes a row-major float32 matrix of gridDim.y*32 rows x 32 columns
// (a 32 x 32 box, no swizzle). The grid is (2, gridDim.y) with clusters of 2 CTAs along x: the
// cluster of row block by needs the tile at rows 32*by, and CTA rank 0 loads it once, multicast
// to both CTAs (ctaMask 0b11): the data lands at the same offset of each CTA's shared memory and
// each CTA's mbarrier at the same offset receives complete_tx(4096). Each CTA then copies its
// tile to columns 32*rank of `out` (gridDim.y*32 rows x 64 columns).
//
// Protocol: in each CTA thread 0 initializes its mbarrier (count 1) and fences the init
// (fence.mbarrier_init.release.cluster); a cluster barrier (arrive.release / wait.acquire) makes
// both CTAs' inits visible before rank 0's copy can signal them; thread 0 of each CTA posts
// arrive.expect_tx(4096) on its own barrier; all threads wait phase 0; a second cluster barrier
// keeps each CTA's shared memory alive until both have read their tiles.
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define TILE_BYTES (TILE * TILE * 4)
#define NUM_THREADS 128
#ifndef TX_BYTES
#define TX_BYTES TILE_BYTES
#endif

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ bool elect_one_sync() {
  uint32_t pred = 0;
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "elect.sync _|p, 0xffffffff;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t"
      "}" : "=r"(pred));
  return pred != 0;
}

__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* tmap, int x, int y,
                                                      uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(smem_u32(bar)), "h"(cta_mask)
      : "memory");
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(NUM_THREADS)
    tma_multicast_elect(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out) {
  __shared__ __align__(128) float tile[TILE * TILE];
  __shared__ __align__(8) uint64_t bar;

  const uint32_t rank = cluster_rank();
  const int y0 = blockIdx.y * TILE;

  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_mbarrier_init();
  }
#ifdef NO_CLUSTER_SYNC
  __syncthreads();  // BUG: orders this CTA only; rank 0's copy may signal the other CTA's barrier before its init
#else
  cluster_sync();
#endif

  if (threadIdx.x / 32 == 0 && elect_one_sync()) {
    mbar_arrive_expect_tx(&bar, TX_BYTES);
    if (rank == 0) tma_load_2d_multicast(tile, &tmap, 0, y0, &bar, 0x3);
  }
  mbar_wait(&bar, 0);
#pragma unroll
  for (int j = 0; j < TILE * TILE / NUM_THREADS; ++j) {
    const unsigned k = threadIdx.x + j * NUM_THREADS;
    out[(size_t)(y0 + k / TILE) * (2 * TILE) + rank * TILE + k % TILE] = tile[k];
  }
  cluster_sync();
}

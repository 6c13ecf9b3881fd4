// cluster_rows: the multicast row copy of tests/data/multicast on a tall grid (2 x gridDim.y,
// clusters of 2 CTAs along x), for cluster symmetry: no cluster reads or writes what another
// writes, so a few clusters stand for all of them (kverify.verifier.races.clusters). Each
// cluster's rank 0 loads the 32 x 32 tile at rows 32*by of `in` once, multicast to both CTAs;
// each CTA copies it to columns 32*rank of the same rows of `out`.
//
// Seeded twins (-D):
//   SKIP_ARRIVE   CTA rank 1 of cluster y == 37 posts no arrive.expect_tx: its phase never
//                 completes and it hangs (a bug in one cluster of 64, away from the first and
//                 last ones the symmetry starts from)
//   TX_BYTES      cluster y == 37 announces half the tile's bytes (a tx mismatch there only)
//   MASK          cluster y == 37 multicasts to rank 0 only: its rank 1 waits forever
//   OVERLAP       cluster y == 11 writes the rows of cluster 12: two clusters write the same
//                 bytes of `out` (no reduction: a cluster affects another)
//   DATA_BARRIER  a CTA barrier under a test of the loaded tile (no reduction: control may
//                 differ between clusters beyond their index)
//   ROW_OOB       cluster y == 37 writes 2048 rows further down, past the end of `out`: an
//                 address, not a branch, so no control decision tells cluster 37 apart; only
//                 the proof that every access is in bounds fails there
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define TILE_BYTES (TILE * TILE * 4)
#define NUM_THREADS 128

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

__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* tmap, int x, int y,
                                                      uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(smem_u32(bar)), "h"(cta_mask)
      : "memory");
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(NUM_THREADS)
    cluster_rows(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out) {
  __shared__ __align__(128) float tile[TILE * TILE];
  __shared__ __align__(8) uint64_t bar;

  const uint32_t rank = cluster_rank();
  const int y0 = blockIdx.y * TILE;
#ifdef OVERLAP
  const int yo = (blockIdx.y == 11 ? 12 : blockIdx.y) * TILE;  // BUG: cluster 11 writes cluster 12's rows
#elif defined(ROW_OOB)
  const int yo = y0 + (blockIdx.y == 37 ? 2048 : 0);  // BUG: past the end of out, in cluster 37 only
#else
  const int yo = y0;
#endif

  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_mbarrier_init();
  }
  cluster_sync();

#ifdef SKIP_ARRIVE
  const bool arrives = !(blockIdx.y == 37 && rank == 1);  // BUG: one CTA of one cluster never arrives
#else
  const bool arrives = true;
#endif
  if (threadIdx.x == 0) {
#ifdef TX_BYTES
    const uint32_t bytes = blockIdx.y == 37 ? TILE_BYTES / 2 : TILE_BYTES;  // BUG in cluster 37
#else
    const uint32_t bytes = TILE_BYTES;
#endif
#ifdef MASK
    const uint16_t mask = blockIdx.y == 37 ? 0x1 : 0x3;  // BUG in cluster 37: rank 1 gets no tile, no signal
#else
    const uint16_t mask = 0x3;
#endif
    if (arrives) mbar_arrive_expect_tx(&bar, bytes);
    if (rank == 0) tma_load_2d_multicast(tile, &tmap, 0, y0, &bar, mask);
  }
  mbar_wait(&bar, 0);
#ifdef DATA_BARRIER
  if (tile[0] == tile[1]) __syncthreads();  // control on loaded data (harmless: every thread takes it alike)
#endif
#pragma unroll
  for (int j = 0; j < TILE * TILE / NUM_THREADS; ++j) {
    const unsigned k = threadIdx.x + j * NUM_THREADS;
    out[(size_t)(yo + k / TILE) * (2 * TILE) + rank * TILE + k % TILE] = tile[k];
  }
  cluster_sync();
}

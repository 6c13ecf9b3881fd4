// tma_tensor_load: one 2D TMA (cp.async.bulk.tensor) tile load per CTA, sm_90a.
//
// The tensor map `tmap` (a __grid_constant__ CUtensorMap kernel parameter; in
// PTX nvcc 13.0 emits `.param .align 128 .b8 tma_tensor_load_param_0[128]`) describes a
// row-major float32 matrix of gridDim.y*32 rows x gridDim.x*32 columns with a
// 32 x 32 box and no swizzle. CTA (bx, by) loads the tile whose top-left
// element is (row 32*by, column 32*bx) - TMA coordinates {x = column,
// y = row} - into shared memory and copies it to the same place of `out`.
//
// Protocol: thread 0 initializes the mbarrier (count 1), fences the init
// (fence.mbarrier_init.release.cluster), __syncthreads(); thread 0 posts
// arrive.expect_tx(4096) and issues the tensor copy, whose complete_tx(4096)
// lands on the same barrier; all 128 threads wait phase 0 (parity 0) before
// reading the tile with generic loads.
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define TILE_BYTES (TILE * TILE * 4)
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
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

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* tmap, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(smem_u32(bar))
      : "memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    tma_tensor_load(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out) {
  __shared__ __align__(128) float tile[TILE * TILE];
  __shared__ __align__(8) uint64_t bar;

  const int x0 = blockIdx.x * TILE;  // first column of the tile
  const int y0 = blockIdx.y * TILE;  // first row of the tile
  const int width = gridDim.x * TILE;

  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(&bar, TILE_BYTES);
    tma_load_2d(tile, &tmap, x0, y0, &bar);
  }
  mbar_wait(&bar, 0);
#pragma unroll
  for (int j = 0; j < TILE * TILE / NUM_THREADS; ++j) {
    const unsigned k = threadIdx.x + j * NUM_THREADS;
    const unsigned r = k / TILE;
    const unsigned c = k % TILE;
    out[(size_t)(y0 + r) * width + x0 + c] = tile[k];
  }
}

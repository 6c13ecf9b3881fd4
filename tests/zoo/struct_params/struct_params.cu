// struct_params: a by-value __grid_constant__ parameter struct, sm_90a.
//
// `Params p` carries a scalar (`cols`, the row length of the output), a pointer
// (`out`, offset 8) and a CUtensorMap (`tmap`, at byte offset 128; the struct is
// 256 bytes, `.param .align 128 .b8 struct_params_param_0[256]` in PTX) describing a row-major
// float32 matrix with a 32 x 32 box and no swizzle. CTA (bx, by) loads the tile
// whose top-left element is (row 32*by, column 32*bx) with one TMA load
// (cp.async.bulk.tensor through &p.tmap) into shared memory, waits on the
// mbarrier, and stores tile + 1 through p.out.
//
// Protocol: thread 0 initializes the mbarrier (count 1), fences the init,
// __syncthreads(); thread 0 posts arrive.expect_tx(4096) and issues the tensor
// copy, whose complete_tx(4096) lands on the same barrier; all 128 threads wait
// phase 0 before reading the tile.
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define TILE_BYTES (TILE * TILE * 4)
#define NUM_THREADS 128

struct Params {
  int cols;               // offset 0
  float* out;             // offset 8
  CUtensorMap tmap;       // offset 128 (CUtensorMap is 64-byte aligned; nvcc places it at 128)
};

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

extern "C" __global__ void __launch_bounds__(NUM_THREADS) struct_params(const __grid_constant__ Params p) {
  __shared__ __align__(128) float tile[TILE * TILE];
  __shared__ __align__(8) uint64_t bar;

  const int x0 = blockIdx.x * TILE;  // first column of the tile
  const int y0 = blockIdx.y * TILE;  // first row of the tile

  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(&bar, TILE_BYTES);
    tma_load_2d(tile, &p.tmap, x0, y0, &bar);
  }
  mbar_wait(&bar, 0);
#pragma unroll
  for (int j = 0; j < TILE * TILE / NUM_THREADS; ++j) {
    const unsigned k = threadIdx.x + j * NUM_THREADS;
    const unsigned r = k / TILE;
    const unsigned c = k % TILE;
    p.out[(size_t)(y0 + r) * p.cols + x0 + c] = tile[k] + 1.0f;
  }
}

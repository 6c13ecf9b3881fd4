// tma_scale: one 32x32 float tile per CTA is loaded by a tensor (TMA) copy into shared memory,
// completed on an mbarrier, then scaled and written to `out` by 128 threads. sm_90a.
// Used by kverify capture's tests and bench/capture_demo.sh (the kernel the host programs launch).
// tma_scale_rt.cu includes this file; tma_scale.ptx is `nvcc -arch=sm_90a -lineinfo -ptx tma_scale.cu`,
// with the .file path made relative.
#include <cstdint>
#include <cuda.h>

#define TILE 32
#define TILE_BYTES (TILE * TILE * 4)
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    tma_scale(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out, int width, float scale) {
  __shared__ __align__(128) float tile[TILE * TILE];
  __shared__ __align__(8) uint64_t bar;
  const int x0 = blockIdx.x * TILE;
  const int y0 = blockIdx.y * TILE;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bar)), "r"(TILE_BYTES)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(tile)),
        "l"(reinterpret_cast<uint64_t>(&tmap)), "r"(x0), "r"(y0), "r"(smem_u32(&bar))
        : "memory");
  }
  asm volatile(
      "{\n\t.reg .pred p;\n\tLAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t}" ::"r"(smem_u32(&bar))
      : "memory");
#pragma unroll
  for (int j = 0; j < TILE * TILE / NUM_THREADS; ++j) {
    const unsigned k = threadIdx.x + j * NUM_THREADS;
    out[(size_t)(y0 + k / TILE) * width + x0 + k % TILE] = tile[k] * scale;
  }
}

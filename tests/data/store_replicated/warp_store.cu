// warp_store: the epilogue idiom of CUTLASS's sm90 TMA epilogue ("one warp issues the TMA
// store": issue_tma_store = thread_idx / 32 == 0): every thread writes its part of a shared
// tile, fences it to the async proxy, __syncthreads(), then all 32 lanes of warp 0 execute the
// same tensor-map store of the tile (and its commit/wait). Each lane issues a copy of the same
// bytes to the same place: a warning (async-group.store-replicated), not a race.
#include <cstdint>

#define ROWS 16
#define COLS 32
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    warp_store(const float* __restrict__ in, const __grid_constant__ CUtensorMap tmap, int tiles) {
  __shared__ __align__(128) float tile[ROWS * COLS];
#pragma unroll 1
  for (int t = 0; t < tiles; ++t) {
    for (int k = threadIdx.x; k < ROWS * COLS; k += NUM_THREADS)
      tile[k] = in[t * ROWS * COLS + k] * 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x / 32 == 0) {
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                   ::"l"(&tmap), "r"(0), "r"(t * ROWS), "r"(smem_u32(tile)) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
  }
}

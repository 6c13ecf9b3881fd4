// warp_bulk_store: the plain bulk-copy form of the warp-wide store idiom: all 32 lanes of warp 0
// execute the same cp.async.bulk store of the shared tile (same source, destination and size).
// Each lane issues a copy of the same bytes to the same place: a warning
// (async-group.store-replicated), not a race.
#include <cstdint>

#define TILE_FLOATS 512
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    warp_bulk_store(const float* __restrict__ in, float* __restrict__ out, int tiles) {
  __shared__ __align__(128) float tile[TILE_FLOATS];
#pragma unroll 1
  for (int t = 0; t < tiles; ++t) {
    for (int k = threadIdx.x; k < TILE_FLOATS; k += NUM_THREADS)
      tile[k] = in[t * TILE_FLOATS + k] + 1.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x / 32 == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                   ::"l"(out + t * TILE_FLOATS), "r"(smem_u32(tile)), "r"(TILE_FLOATS * 4) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
  }
}

// Seeded twin of bulk_store.cu: threads 64-127 leave before the loop, whose barriers the others then wait at.
// tile to global memory, one tile per iteration of a loop all threads run alike), for its twins here.
//
// One CTA of 128 threads loops over `iters` tiles of 512 floats (2048 bytes).
// Per tile:
//   1. every thread writes its part of the tile with generic st.shared
//      (tile[k] = in[it*512 + k] + 1);
//   2. every writing thread executes fence.proxy.async.shared::cta, making its
//      generic writes visible to the async proxy;
//   3. __syncthreads();
//   4. thread 0 issues cp.async.bulk.global.shared::cta.bulk_group,
//      cp.async.bulk.commit_group and cp.async.bulk.wait_group.read 0, so the
//      bulk store has finished reading the tile;
//   5. __syncthreads(), after which the tile may be overwritten (next tile).
#include <cstdint>

#define TILE_FLOATS 512
#define TILE_BYTES (TILE_FLOATS * 4)
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void bulk_s2g(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_u32(src)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

__device__ __forceinline__ void bulk_wait_group_read0() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    bulk_store(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ __align__(128) float tile[TILE_FLOATS];

  if (threadIdx.x >= 64) return;  // (the others then wait at the loop's barriers alone)
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < TILE_FLOATS / NUM_THREADS; ++j) {
      const int k = threadIdx.x + j * NUM_THREADS;
      tile[k] = in[(size_t)it * TILE_FLOATS + k] + 1.0f;
    }
    fence_proxy_async_smem();
    __syncthreads();
    if (threadIdx.x == 0) {
      bulk_s2g(out + (size_t)it * TILE_FLOATS, tile, TILE_BYTES);
      bulk_commit_group();
      bulk_wait_group_read0();
    }
    __syncthreads();
  }
}

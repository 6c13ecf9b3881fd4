// issuer_fence__before_barrier (seeded bug): the proxy fence only in the issuing thread, and
// before the __syncthreads: the other threads' generic writes are not ordered before it
// (race.async-proxy, an error).
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
    tma_store(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ __align__(128) float tile[TILE_FLOATS];

#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < TILE_FLOATS / NUM_THREADS; ++j) {
      const int k = threadIdx.x + j * NUM_THREADS;
      tile[k] = in[(size_t)it * TILE_FLOATS + k] + 1.0f;
    }
    if (threadIdx.x == 0) fence_proxy_async_smem();
    __syncthreads();
    if (threadIdx.x == 0) {
      bulk_s2g(out + (size_t)it * TILE_FLOATS, tile, TILE_BYTES);
      bulk_commit_group();
      bulk_wait_group_read0();
    }
    __syncthreads();
  }
}

// Bulk reductions into global memory, sm_90a: cp.reduce.async.bulk.tensor (tile mode, through a
// tensor map) and cp.reduce.async.bulk (a byte range), for f32, f16 and bf16 adds and an s32 max,
// and red.global.add for the same float types.
//
// Each CTA owns a 32 x 32 tile (blockIdx.x: tile column, blockIdx.y: tile row) of a rows x cols
// row-major matrix `out`. Its threads store the tile's destination elements, out = T(b * scale),
// and the reduction's source, tile = T(a * scale), into shared memory; each writer fences its
// stores toward the async proxy (fence.proxy.async.global for out, .shared::cta for the tile);
// after a CTA barrier, thread 0 issues one reduction of the tile into out, commits it to a bulk
// async-group and waits for its source reads (cp.async.bulk.wait_group.read 0). `scale` lets a
// launch make every value subnormal. Elements of the box outside the matrix are dropped by the
// tensor reduction. The byte-range reduction (`bulk_*`) adds the tile, row by row, into rows
// 32*by.. of the matrix at column 32*bx, clipped to the matrix like the tensor reduction.
#include <cstdint>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define TILE 32

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ int from_float<int>(float x) { return __float2int_rn(x); }

// the tile and the destination elements, fenced toward the async proxy, then a CTA barrier
template <typename T, bool FENCE_GLOBAL = true>
__device__ __forceinline__ void prepare(T* tile, const float* a, const float* b, T* out, int rows, int cols,
                                        float scale) {
  for (int e = threadIdx.x; e < TILE * TILE; e += blockDim.x) {
    int r = blockIdx.y * TILE + e / TILE, c = blockIdx.x * TILE + e % TILE;
    bool in = r < rows && c < cols;
    tile[e] = from_float<T>((in ? a[r * cols + c] : 1.0f) * scale);
    if (in) out[r * cols + c] = from_float<T>(b[r * cols + c] * scale);
  }
  if (FENCE_GLOBAL) asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
}

__device__ __forceinline__ void commit_and_wait_read() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

enum Op { ADD, MAX };

// thread 0: one tensor reduction of the tile into the box at (32 bx, 32 by) of the tensor map
template <Op OP>
__device__ __forceinline__ void tensor_reduce(const CUtensorMap* tmap, const void* tile) {
  if (threadIdx.x != 0) return;
  if constexpr (OP == ADD)
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(tmap), "r"(blockIdx.x * TILE), "r"(blockIdx.y * TILE), "r"(smem_u32(tile)) : "memory");
  else
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(tmap), "r"(blockIdx.x * TILE), "r"(blockIdx.y * TILE), "r"(smem_u32(tile)) : "memory");
  commit_and_wait_read();
}

extern "C" __global__ void tensor_add_f32(const __grid_constant__ CUtensorMap tmap, const float* a, const float* b,
                                          float* out, int rows, int cols, float scale) {
  __shared__ alignas(1024) float tile[TILE * TILE];
  prepare<float>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<ADD>(&tmap, tile);
}

// seeded bugs: the destination's generic stores not fenced toward the async proxy; the destination
// read right after wait_group.read, which waits only for the reduction's source reads
extern "C" __global__ void tensor_add_f32__no_global_fence(const __grid_constant__ CUtensorMap tmap, const float* a,
                                                           const float* b, float* out, int rows, int cols,
                                                           float scale) {
  __shared__ alignas(1024) float tile[TILE * TILE];
  prepare<float, false>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<ADD>(&tmap, tile);
}

extern "C" __global__ void tensor_add_f32__read_early(const __grid_constant__ CUtensorMap tmap, const float* a,
                                                      const float* b, float* out, int rows, int cols, float scale) {
  __shared__ alignas(1024) float tile[TILE * TILE];
  prepare<float>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<ADD>(&tmap, tile);
  if (threadIdx.x == 0) out[(blockIdx.y * TILE) * cols + blockIdx.x * TILE] *= 2.0f;
}

extern "C" __global__ void tensor_add_f16(const __grid_constant__ CUtensorMap tmap, const float* a, const float* b,
                                          __half* out, int rows, int cols, float scale) {
  __shared__ alignas(1024) __half tile[TILE * TILE];
  prepare<__half>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<ADD>(&tmap, tile);
}

extern "C" __global__ void tensor_add_bf16(const __grid_constant__ CUtensorMap tmap, const float* a, const float* b,
                                           __nv_bfloat16* out, int rows, int cols, float scale) {
  __shared__ alignas(1024) __nv_bfloat16 tile[TILE * TILE];
  prepare<__nv_bfloat16>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<ADD>(&tmap, tile);
}

extern "C" __global__ void tensor_max_s32(const __grid_constant__ CUtensorMap tmap, const float* a, const float* b,
                                          int* out, int rows, int cols, float scale) {
  __shared__ alignas(1024) int tile[TILE * TILE];
  prepare<int>(tile, a, b, out, rows, cols, scale);
  tensor_reduce<MAX>(&tmap, tile);
}

// threads 0..31: row r of the tile into out[r][32 bx ..], clipped to the matrix, whole 16 bytes
template <typename T>
__device__ __forceinline__ void bulk_reduce(const T* tile, T* out, int rows, int cols) {
  int r = blockIdx.y * TILE + threadIdx.x, c = blockIdx.x * TILE;
  int n = cols - c < TILE ? cols - c : TILE;
  unsigned bytes = (unsigned)(n * sizeof(T)) & ~15u;
  if (threadIdx.x >= TILE || r >= rows || bytes == 0) return;
  const T* src = tile + threadIdx.x * TILE;
  T* dst = out + r * cols + c;
  if constexpr (sizeof(T) == 4)
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                 ::"l"(dst), "r"(smem_u32(src)), "r"(bytes) : "memory");
  else if constexpr (__is_same(T, __half))
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.f16 [%0], [%1], %2;"
                 ::"l"(dst), "r"(smem_u32(src)), "r"(bytes) : "memory");
  else
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], %2;"
                 ::"l"(dst), "r"(smem_u32(src)), "r"(bytes) : "memory");
  commit_and_wait_read();
}

extern "C" __global__ void bulk_add_f32(const float* a, const float* b, float* out, int rows, int cols, float scale) {
  __shared__ alignas(128) float tile[TILE * TILE];
  prepare<float>(tile, a, b, out, rows, cols, scale);
  bulk_reduce<float>(tile, out, rows, cols);
}

extern "C" __global__ void bulk_add_f16(const float* a, const float* b, __half* out, int rows, int cols, float scale) {
  __shared__ alignas(128) __half tile[TILE * TILE];
  prepare<__half>(tile, a, b, out, rows, cols, scale);
  bulk_reduce<__half>(tile, out, rows, cols);
}

extern "C" __global__ void bulk_add_bf16(const float* a, const float* b, __nv_bfloat16* out, int rows, int cols,
                                         float scale) {
  __shared__ alignas(128) __nv_bfloat16 tile[TILE * TILE];
  prepare<__nv_bfloat16>(tile, a, b, out, rows, cols, scale);
  bulk_reduce<__nv_bfloat16>(tile, out, rows, cols);
}

// red.global.add / atom.global.add: each thread stores its element of out, then adds to it
template <typename T>
__device__ __forceinline__ void red_add(const float* a, const float* b, T* out, int rows, int cols, float scale) {
  int c = blockIdx.x * TILE + threadIdx.x % TILE;
  for (int r = blockIdx.y * TILE + threadIdx.x / TILE; r < blockIdx.y * TILE + TILE; r += blockDim.x / TILE)
    if (r < rows && c < cols) {
      out[r * cols + c] = from_float<T>(b[r * cols + c] * scale);
      atomicAdd(out + r * cols + c, from_float<T>(a[r * cols + c] * scale));
    }
}

extern "C" __global__ void red_add_f32(const float* a, const float* b, float* out, int rows, int cols, float scale) {
  red_add<float>(a, b, out, rows, cols, scale);
}

extern "C" __global__ void red_add_f16(const float* a, const float* b, __half* out, int rows, int cols, float scale) {
  red_add<__half>(a, b, out, rows, cols, scale);
}

extern "C" __global__ void red_add_bf16(const float* a, const float* b, __nv_bfloat16* out, int rows, int cols,
                                        float scale) {
  red_add<__nv_bfloat16>(a, b, out, rows, cols, scale);
}

// atom.shared.add.f32: the same add into a shared tile, which is then copied to out
extern "C" __global__ void red_add_f32_shared(const float* a, const float* b, float* out, int rows, int cols,
                                              float scale) {
  __shared__ float tile[TILE * TILE];
  for (int e = threadIdx.x; e < TILE * TILE; e += blockDim.x) {
    int r = blockIdx.y * TILE + e / TILE, c = blockIdx.x * TILE + e % TILE;
    tile[e] = r < rows && c < cols ? b[r * cols + c] * scale : 0.0f;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < TILE * TILE; e += blockDim.x) {
    int r = blockIdx.y * TILE + e / TILE, c = blockIdx.x * TILE + e % TILE;
    if (r < rows && c < cols) atomicAdd(&tile[e], a[r * cols + c] * scale);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < TILE * TILE; e += blockDim.x) {
    int r = blockIdx.y * TILE + e / TILE, c = blockIdx.x * TILE + e % TILE;
    if (r < rows && c < cols) out[r * cols + c] = tile[e];
  }
}

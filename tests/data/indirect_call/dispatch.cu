// Calls through function pointers that may hold several functions: the static side runs each
// function the pointer may hold under the condition that it holds that function's address.
// Compiled with nvcc 13: nvcc -arch=sm_90a -lineinfo -ptx dispatch.cu (tests/test_brx.py).
//
// pick_param        a kernel parameter picks put or put_scaled (both race-free)
// pick_param_race   a kernel parameter picks put or put_pair (put_pair: threads 2k and 2k+1 write one element)
// pick_table        a __device__ table {put, put_scaled} indexed by which & 1
// pick_table_any    the same table indexed by which: an index past the table reads no function
// pick_maybe_null   put for which == 1, put_scaled for which == 2, else a null pointer
// pick_index        the callee's return value is the index stored to (same or mirror: both permutations)
// pick_span         a by-value struct argument (base, stride) passed field by field
// pick_tile         the callees hold a __syncthreads() between a shared write and a shared read
// pick_tile_race    one callee leaves the __syncthreads() out (a shared race in it)
// pick_tile_split   the pointer depends on the warp: warps call different functions, each with its
//                   own barrier (barrier divergence)
// pick_checked      a callee with an assert() that fails for large values
// pick_fib          a recursive callee
// pick_loop         a loop calls the picked function in every iteration (row k of the block's 4)
// pick_search       the callees return from inside a loop (the index of the first zero or nonzero element)
#include <cassert>

typedef void (*store_fn)(float*, int, float);
typedef int (*index_fn)(int, int);
struct span {
  int base;
  int stride;
};
typedef void (*span_fn)(float*, span, int, float);
typedef void (*tile_fn)(float*, float*, int);
typedef void (*checked_fn)(int*, int, int);
typedef int (*count_fn)(int);
typedef int (*search_fn)(const int*, int);

__device__ __noinline__ void put(float* y, int i, float v) { y[i] = v; }
__device__ __noinline__ void put_scaled(float* y, int i, float v) { y[i] = 2.0f * v; }
__device__ __noinline__ void put_pair(float* y, int i, float v) { y[i & ~1] = v; }

__device__ store_fn stores[2] = {put, put_scaled};

__device__ __noinline__ int same(int i, int n) { return i; }
__device__ __noinline__ int mirror(int i, int n) { return n - 1 - i; }

__device__ __noinline__ void put_span(float* y, span s, int t, float v) { y[s.base + s.stride * t] = v; }
__device__ __noinline__ void add_span(float* y, span s, int t, float v) { y[s.base + s.stride * t] += v; }

__device__ __noinline__ void rotate(float* tile, float* out, int i) {
  tile[threadIdx.x] = i;
  __syncthreads();
  out[i] = tile[(threadIdx.x + 1) % 128];
}
__device__ __noinline__ void reflect(float* tile, float* out, int i) {
  tile[threadIdx.x] = i;
  __syncthreads();
  out[i] = tile[127 - threadIdx.x];
}
__device__ __noinline__ void rotate_unsynced(float* tile, float* out, int i) {
  tile[threadIdx.x] = i;
  out[i] = tile[(threadIdx.x + 1) % 128];
}

__device__ __noinline__ void put_small(int* y, int i, int v) {
  assert(v < 1000);
  y[i] = v;
}
__device__ __noinline__ void put_nonneg(int* y, int i, int v) {
  assert(v >= 0);
  y[i] = v;
}

__device__ __noinline__ int fib(int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
__device__ __noinline__ int twice(int k) { return 2 * k; }

extern "C" __global__ void __launch_bounds__(128) pick_param(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    store_fn f = which ? put_scaled : put;
    f(y, i, x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_param_race(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    store_fn f = which ? put_pair : put;
    f(y, i, x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_table(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    stores[which & 1](y, i, x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_table_any(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    stores[which](y, i, x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_maybe_null(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  store_fn f = nullptr;
  if (which == 1) {
    f = put;
  } else if (which == 2) {
    f = put_scaled;
  }
  if (i < n) {
    f(y, i, x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_index(float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    index_fn g = which ? mirror : same;
    y[g(i, n)] = i;
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_span(const float* x, float* y, int which, int n) {
  int t = threadIdx.x;
  span s = {(int)blockIdx.x * 256, 2};
  span_fn f = which ? add_span : put_span;
  f(y, s, t, x[blockIdx.x * 128 + t]);
}

extern "C" __global__ void __launch_bounds__(128) pick_tile(float* out, int which) {
  __shared__ float tile[128];
  tile_fn f = which ? reflect : rotate;
  f(tile, out, blockIdx.x * 128 + threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(128) pick_tile_race(float* out, int which) {
  __shared__ float tile[128];
  tile_fn f = which ? rotate_unsynced : rotate;
  f(tile, out, blockIdx.x * 128 + threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(128) pick_tile_split(float* out) {
  __shared__ float tile[128];
  tile_fn f = threadIdx.x < 64 ? reflect : rotate;
  f(tile, out, blockIdx.x * 128 + threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(128) pick_checked(int* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    checked_fn f = which ? put_small : put_nonneg;
    f(y, i, i);
  }
}

extern "C" __global__ void __launch_bounds__(128) pick_fib(int* y, int which) {
  int i = blockIdx.x * 128 + threadIdx.x;
  count_fn f = which ? fib : twice;
  y[i] = f(threadIdx.x & 7);
}

extern "C" __global__ void __launch_bounds__(128) pick_loop(const float* x, float* y, int which) {
  store_fn f = which ? put_scaled : put;
#pragma unroll 1
  for (int k = 0; k < 4; ++k) {
    size_t row = ((size_t)blockIdx.x * 4 + k) * 128;
    f(y + row, threadIdx.x, x[row + threadIdx.x]);
  }
}

__device__ __noinline__ int first_nonzero(const int* v, int len) {
  for (int j = 0; j < len; ++j) {
    if (v[j] != 0) return j;
  }
  return len;
}
__device__ __noinline__ int first_zero(const int* v, int len) {
  for (int j = 0; j < len; ++j) {
    if (v[j] == 0) return j;
  }
  return len;
}

extern "C" __global__ void __launch_bounds__(128) pick_search(const int* v, int* out, int which, int len) {
  search_fn f = which ? first_zero : first_nonzero;
  out[blockIdx.x * 128 + threadIdx.x] = f(v, len);
}

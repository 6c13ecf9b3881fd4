// Calls through function pointers, so the PTX has .callprototype and `call (r), %rd, (a), proto;`.
// apply:       the pointer is chosen by a kernel parameter (selp of two `mov.u64 %rd, f`)
// apply_table: the pointer is loaded from a __device__ table of function pointers
// store:       the callee writes memory: store_half writes y[i / 2], so with which != 0 two
//              threads write the same element (a seeded global race); store_here is correct
typedef float (*unary_fn)(float);
typedef void (*store_fn)(float*, int, float);

__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__device__ __noinline__ float plus_one(float v) { return v + 1.0f; }
__device__ unary_fn table[2] = {twice, plus_one};

__device__ __noinline__ void store_here(float* y, int i, float v) { y[i] = v; }
__device__ __noinline__ void store_half(float* y, int i, float v) { y[i >> 1] = v; }

extern "C" __global__ void __launch_bounds__(128)
apply(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    unary_fn f = which ? plus_one : twice;
    y[i] = f(x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128)
apply_table(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    y[i] = table[which & 1](x[i]);
  }
}

extern "C" __global__ void __launch_bounds__(128)
store(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) {
    store_fn f = which ? store_half : store_here;
    f(y, i, x[i]);
  }
}

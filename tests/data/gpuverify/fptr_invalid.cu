//xfail:NOT_ALL_VERIFIED
//--blockDim=256 --gridDim=4

// Calls through function pointers that may hold no function, in the idiom of GPUVerify's
// function-pointer tests ("possible null pointer access"), and the cases that must stay clean.

typedef void (*update_fn)(float *, unsigned);

__device__ void halve(float *v, unsigned i) { v[i] = v[i] * 0.5f; }
__device__ void negate(float *v, unsigned i) { v[i] = -v[i]; }

// the host passes the pointer, and nothing restricts it: null is a legal argument
__global__ void call_param(float *v, update_fn f, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    f(v, i);
  }
}

// an integer cast to a function pointer
__global__ void call_const(float *v) {
  update_fn f = (update_fn)5;
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

// null only where the call is not reached
__global__ void call_guarded(float *v, int which) {
  update_fn f = which == 1 ? halve : which == 2 ? negate : (update_fn)0;
  if (which == 1 || which == 2) {
    f(v, blockIdx.x * blockDim.x + threadIdx.x);
  }
}

// null when which is neither 1 nor 2, and the call is reached then
__global__ void call_maybe_null(float *v, int which) {
  update_fn f = which == 1 ? halve : which == 2 ? negate : (update_fn)0;
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

// the precondition keeps the pointer to the two functions
__global__ void call_requires(float *v, update_fn f) {
  __requires(f == halve | f == negate);
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

// the pointer is read out of a buffer of the host's: kverify does not claim what it holds
__global__ void call_from_table(float *v, update_fn *fns, unsigned k) {
  fns[k](v, blockIdx.x * blockDim.x + threadIdx.x);
}

//pass
//--blockDim=256 --gridDim=4

// A function pointer passed by the host, in the idiom of GPUVerify's function-pointer tests: the
// precondition names the functions it may be; each stores only its own thread's element.

typedef void (*update_fn)(float *, unsigned);

__device__ void halve(float *v, unsigned i) { v[i] = v[i] * 0.5f; }
__device__ void negate(float *v, unsigned i) { v[i] = -v[i]; }
__device__ void spread(float *v, unsigned i) { v[i / 2] = v[i]; }

__global__ void update(float *v, update_fn f) {
  __requires(f == halve | f == negate);
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

__global__ void update_any(float *v, update_fn f) {
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

__global__ void update_spread(float *v, update_fn f) {
  __requires(f == halve | f == spread);
  f(v, blockIdx.x * blockDim.x + threadIdx.x);
}

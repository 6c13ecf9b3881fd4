//xfail:NOT_ALL_VERIFIED
//--blockDim=64 --gridDim=2

// The grid has 128 threads and the kernel asserts that its index stays below n = 64:
// every thread of CTA 1 breaks the assertion.

__global__ void fill_index(int *out, int n) {
  __requires(n == 64);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __assert(i < n);
  out[i] = i;
}

// Every thread that sees a mismatch clears one global flag, and one shared flag per block:
// racing writes of the same value (a data race by the ISA's letter, order-independent).
extern "C" __global__ void compare_equal(const float* a, const float* b, int* equal, int* block_equal, int n) {
  __shared__ int s_equal;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) s_equal = 1;
  __syncthreads();
  if (i < n && a[i] != b[i]) {
    *equal = 0;
    s_equal = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) block_equal[blockIdx.x] = s_equal;
}

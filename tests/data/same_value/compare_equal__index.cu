// Seeded bug: the racing global writes store the thread index (different values).
extern "C" __global__ void compare_equal(const float* a, const float* b, int* equal, int* block_equal, int n) {
  __shared__ int s_equal;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) s_equal = 1;
  __syncthreads();
  if (i < n && a[i] != b[i]) {
    *equal = i;  // seeded bug: the racing writes store different values
    s_equal = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) block_equal[blockIdx.x] = s_equal;
}

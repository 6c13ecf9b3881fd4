//pass
//--blockDim=128 --gridDim=8

// A tree sum per block in the idiom of GPUVerify's tests: the launch's size as a
// precondition, the loop's facts as invariants (kverify lists them, unchecked).

__global__ void block_sum(const int *in, int *out, int n) {
  __requires(n == 1024);
  __shared__ int partial[128];
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = gid < n ? in[gid] : 0;
  __syncthreads();
  for (unsigned d = blockDim.x / 2;
       __invariant(__is_pow2(d)),
       __invariant(__implies(__write(partial), threadIdx.x < 2 * d)),
       d > 0; d >>= 1) {
    if (threadIdx.x < d)
      partial[threadIdx.x] += partial[threadIdx.x + d];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[0];
}

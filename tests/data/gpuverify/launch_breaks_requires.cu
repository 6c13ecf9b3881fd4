//pass
//--blockDim=128 --gridDim=4

// Written for blocks of 256 threads (each thread writes two elements of its block's
// 512): the header's launch, 128 threads per block, breaks the precondition.

__global__ void pairs(float *data) {
  __requires(blockDim.x == 256);
  unsigned base = blockIdx.x * 512;
  data[base + threadIdx.x] = 0.0f;
  data[base + 256 + threadIdx.x] = 1.0f;
}

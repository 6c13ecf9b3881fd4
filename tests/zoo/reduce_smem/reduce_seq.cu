// Sequential reduction with the same contract as reduce_smem.cu: each block
// sums its BLOCK floats (zero past n) and writes one partial sum to
// out[blockIdx.x]; here thread 0 adds them one after another in index order.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_seq(const float* in, float* out, int n) {
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (unsigned j = 0; j < BLOCK; ++j) {
      unsigned i = blockIdx.x * BLOCK + j;
      if (i < n) {
        sum += in[i];
      }
    }
    out[blockIdx.x] = sum;
  }
}

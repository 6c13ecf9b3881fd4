// Warp-shuffle reduction: each warp reduces its 32 values with
// __shfl_down_sync, lane 0 of each warp stores the warp sum in shared memory,
// then warp 0 reduces the per-warp sums and writes out[blockIdx.x].
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_warp(const float* in, float* out, int n) {
  __shared__ float warp_sums[WARPS];
  unsigned tid = threadIdx.x;
  unsigned lane = tid & 31;
  unsigned warp = tid >> 5;
  unsigned i = blockIdx.x * BLOCK + tid;
  float v = (i < n) ? in[i] : 0.0f;
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(FULL_MASK, v, offset);
  }
  if (lane == 0) {
    warp_sums[warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
    v = (lane < WARPS) ? warp_sums[lane] : 0.0f;
    for (int offset = WARPS / 2; offset > 0; offset >>= 1) {
      v += __shfl_down_sync(FULL_MASK, v, offset);
    }
    if (lane == 0) {
      out[blockIdx.x] = v;
    }
  }
}

// Whole-array sum with one float atomic per block: each block reduces BLOCK
// floats in shared memory (tree), then thread 0 adds the block's partial sum to
// out[0] with atomicAdd (return value unused -> red.global.add.f32).
// Contract: out[0] += sum of in[0..n).
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
sum_atomic(const float* in, float* out, int n) {
  __shared__ float sdata[BLOCK];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * BLOCK + tid;
  sdata[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) {
    atomicAdd(&out[0], sdata[0]);
  }
}

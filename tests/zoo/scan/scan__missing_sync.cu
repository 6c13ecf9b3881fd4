// Block-level inclusive prefix sum (Hillis-Steele) over BLOCK elements per
// block, double-buffered in shared memory: each step reads buffer `pin` and
// writes buffer `pout`, with a barrier between steps. out[i] is the inclusive
// sum of in[] from the start of the block's segment up to i.
// Seeded bug: the barrier between steps is missing.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
scan(const float* in, float* out, int n) {
  __shared__ float buf[2][BLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * BLOCK + tid;
  int pout = 0;
  buf[pout][tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (int offset = 1; offset < BLOCK; offset <<= 1) {
    pout = 1 - pout;
    int pin = 1 - pout;
    float v = buf[pin][tid];
    if (tid >= offset) {
      v += buf[pin][tid - offset];  // BUG: no barrier between steps; thread tid - offset may not have written its previous step yet
    }
    buf[pout][tid] = v;
  }
  if (i < n) {
    out[i] = buf[pout][tid];
  }
}

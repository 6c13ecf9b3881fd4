// Row softmax, one block per row, two passes over the row:
// pass 1 finds the row max, pass 2 sums exp(x - max); then each element is
// written as exp(x - max) / sum. Uses expf (full-precision exponential).
// Seeded functional bug: the final pass computes exp(max - x), the operands of
// the subtraction swapped.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax(const float* x, float* y, int cols) {
  __shared__ float red[BLOCK];
  const float* row = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  int tid = threadIdx.x;

  // pass 1: row maximum
  float m = -INFINITY;
  for (int c = tid; c < cols; c += BLOCK) {
    m = fmaxf(m, row[c]);
  }
  red[tid] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      red[tid] = fmaxf(red[tid], red[tid + s]);
    }
    __syncthreads();
  }
  m = red[0];
  __syncthreads();  // all threads have read red[0] before red is reused

  // pass 2: sum of exp(x - max)
  float sum = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) {
    sum += expf(row[c] - m);
  }
  red[tid] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      red[tid] += red[tid + s];
    }
    __syncthreads();
  }
  float inv = 1.0f / red[0];

  for (int c = tid; c < cols; c += BLOCK) {
    out[c] = expf(m - row[c]) * inv;  // BUG: expf(row[c] - m)
  }
}

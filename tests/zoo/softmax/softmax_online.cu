// Row softmax, one block per row, single pass for the statistics: each
// thread keeps a running max m and a running sum d of exp(x - m), rescaling
// d whenever m grows ("online softmax"); the block then merges the (m, d)
// pairs in a shared-memory tree. Uses expf (full-precision exponential).
#define BLOCK 256

// Merge two (max, sum) pairs; an empty pair is (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& d, float m2, float d2) {
  float mn = fmaxf(m, m2);
  if (mn == -INFINITY) {
    return;  // both empty
  }
  d = d * expf(m - mn) + d2 * expf(m2 - mn);
  m = mn;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_online(const float* x, float* y, int cols) {
  __shared__ float red_m[BLOCK];
  __shared__ float red_d[BLOCK];
  const float* row = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  int tid = threadIdx.x;

  float m = -INFINITY;
  float d = 0.0f;
  for (int c = tid; c < cols; c += BLOCK) {
    merge(m, d, row[c], 1.0f);
  }
  red_m[tid] = m;
  red_d[tid] = d;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) {
      float mm = red_m[tid];
      float dd = red_d[tid];
      merge(mm, dd, red_m[tid + s], red_d[tid + s]);
      red_m[tid] = mm;
      red_d[tid] = dd;
    }
    __syncthreads();
  }
  m = red_m[0];
  float inv = 1.0f / red_d[0];

  for (int c = tid; c < cols; c += BLOCK) {
    out[c] = expf(row[c] - m) * inv;
  }
}

// Row softmax, one warp per row (4 warps per block), online statistics in the
// base-2 form of FlashAttention-style kernels: logits are pre-scaled by
// log2(e), each lane keeps a running max m and a running sum d of
// exp2(v - m) over its columns, rescaling d by exp2(m_old - m_new) whenever m
// grows; the 32 lane pairs (m, d) are then merged across the warp with
// __shfl_xor_sync (butterfly: every lane ends with the row's max and sum).
#define WARPS 4
#define LOG2E 1.4426950408889634f

// Merge (m2, d2) into (m, d); an empty pair is (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& d, float m2, float d2) {
  float mn = fmaxf(m, m2);
  if (mn == -INFINITY) {
    return;  // both empty
  }
  d = d * exp2f(m - mn) + d2 * exp2f(m2 - mn);
  m = mn;
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
softmax_warp(const float* x, float* y, int rows, int cols) {
  int lane = threadIdx.x % 32;
  int r = blockIdx.x * WARPS + threadIdx.x / 32;
  if (r >= rows) {
    return;  // whole warp exits together
  }
  const float* row = x + (size_t)r * cols;
  float* out = y + (size_t)r * cols;

  float m = -INFINITY;  // running max of x * log2(e)
  float d = 0.0f;       // running sum of exp2(x * log2(e) - m)
  for (int c = lane; c < cols; c += 32) {
    float v = row[c] * LOG2E;
    float mn = fmaxf(m, v);
    d = d * exp2f(m - mn) + exp2f(v - mn);  // rescale the old sum to the new max
    m = mn;
  }
  for (int off = 16; off > 0; off >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    float d2 = __shfl_xor_sync(0xffffffffu, d, off);
    merge(m, d, m2, d2);
  }
  float inv = 1.0f / d;
  for (int c = lane; c < cols; c += 32) {
    out[c] = exp2f(row[c] * LOG2E - m) * inv;
  }
}

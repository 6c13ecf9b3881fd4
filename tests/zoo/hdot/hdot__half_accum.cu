// Half-precision dot products: out[r] = sum_k a[r*K + k] * b[k], one thread per
// row, fp16 inputs.
// Seeded functional bug: the running sum is kept in __half (rounded to fp16
// after every step) where the reference accumulates in float.
#include <cuda_fp16.h>
#define BLOCK 32

extern "C" __global__ void __launch_bounds__(BLOCK)
hdot(const __half* a, const __half* b, float* out, int rows, int K) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    __half acc = __float2half(0.0f);
    for (int k = 0; k < K; ++k) {
      acc = __float2half(__half2float(acc) + __half2float(a[r * K + k]) * __half2float(b[k]));  // BUG: float acc
    }
    out[r] = __half2float(acc);
  }
}

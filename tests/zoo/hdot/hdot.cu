// Half-precision dot products: out[r] = sum_k a[r*K + k] * b[k], one thread per
// row, fp16 inputs, products and sum in fp32 (accumulate in float).
#include <cuda_fp16.h>
#define BLOCK 32

extern "C" __global__ void __launch_bounds__(BLOCK)
hdot(const __half* a, const __half* b, float* out, int rows, int K) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += __half2float(a[r * K + k]) * __half2float(b[k]);
    }
    out[r] = acc;
  }
}

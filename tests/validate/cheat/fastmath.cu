// B10 (compile-flag drift): built with --use_fast_math, so the division is div.approx.ftz
// and the arithmetic flushes subnormals.
// PTX: nvcc -arch=sm_90a -lineinfo -ptx --use_fast_math fastmath.cu -o fastmath.ptx
extern "C" __global__ void scale_fast(const float *x, const float *y, float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] / y[i];
}

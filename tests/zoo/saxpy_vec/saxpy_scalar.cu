// SAXPY, one float per thread: y[i] = alpha * x[i] + y[i].
#define BLOCK 128

extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy_scalar(int n, float alpha, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = alpha * x[i] + y[i];
  }
}

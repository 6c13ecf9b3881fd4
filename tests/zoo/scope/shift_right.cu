// Shift a vector right by one element: out[0] = 0, out[i + 1] = in[i].
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
shift_right(float* out, const float* in, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i + 1 < n) {
    out[i + 1] = in[i];
  }
  if (i == 0) {
    out[0] = 0.0f;
  }
}

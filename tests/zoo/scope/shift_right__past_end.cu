// Shift a vector right by one element: out[0] = 0, out[i + 1] = in[i].
// Seeded bug: the guard tests i, not i + 1, so the last thread writes out[n], one
// element past the end of out.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
shift_right(float* out, const float* in, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) {
    out[i + 1] = in[i];  // BUG: writes out[n] for i = n - 1
  }
  if (i == 0) {
    out[0] = 0.0f;
  }
}

// 1D 3-point stencil out[i] = 0.25*in[i-1] + 0.5*in[i] + 0.25*in[i+1],
// with in[] taken as 0 outside [0, n). Each block stages its BLOCK elements
// plus a one-element halo on each side in shared memory. The grid may cover
// more than n threads; out-of-range threads load 0 and store nothing.
// Seeded bug: the barrier between staging and reading the neighbours is missing.
#define BLOCK 256
#define RADIUS 1

extern "C" __global__ void __launch_bounds__(BLOCK)
stencil(const float* in, float* out, int n) {
  __shared__ float s[BLOCK + 2 * RADIUS];
  int g = blockIdx.x * BLOCK + threadIdx.x;
  int l = threadIdx.x + RADIUS;
  s[l] = (g < n) ? in[g] : 0.0f;
  if (threadIdx.x < RADIUS) {
    int left = g - RADIUS;
    int right = g + BLOCK;
    s[l - RADIUS] = (left >= 0 && left < n) ? in[left] : 0.0f;
    s[l + BLOCK] = (right < n) ? in[right] : 0.0f;
  }
  if (g < n) {
    out[g] = 0.25f * s[l - 1] + 0.5f * s[l] + 0.25f * s[l + 1];  // BUG: reads neighbours' s[] entries with no barrier after they are stored
  }
}

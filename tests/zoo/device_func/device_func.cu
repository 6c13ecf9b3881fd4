// A kernel calling a non-inlined device function, so the PTX contains a
// .func and a call: y[i] = smoothstep(edge0, edge1, x[i]).
#define BLOCK 256

__device__ __noinline__ float smoothstep(float edge0, float edge1, float v) {
  float t = (v - edge0) / (edge1 - edge0);
  t = fminf(fmaxf(t, 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
device_func(const float* x, float* y, int n, float edge0, float edge1) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) {
    y[i] = smoothstep(edge0, edge1, x[i]);
  }
}

// Equivalence through device-function calls: reference and candidates of y[i] = smoothstep(x[i])
// (cf. tests/zoo/device_func). `inlined` computes it in the kernel (equivalent to `called`);
// `nested` calls a function that calls another and has an early return (equivalent);
// `called__swapped` passes the edges in the wrong order (a seeded bug).
#define BLOCK 256

__device__ __noinline__ float clamp01(float t) { return fminf(fmaxf(t, 0.0f), 1.0f); }

__device__ __noinline__ float smoothstep(float edge0, float edge1, float v) {
  float t = (v - edge0) / (edge1 - edge0);
  t = fminf(fmaxf(t, 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

__device__ __noinline__ float smoothstep_nested(float edge0, float edge1, float v) {
  if (edge0 == edge1) return v < edge0 ? 0.0f : 1.0f;  // an early return (not taken: edge0 != edge1)
  float t = clamp01((v - edge0) / (edge1 - edge0));
  return t * t * (3.0f - 2.0f * t);
}

extern "C" __global__ void __launch_bounds__(BLOCK) called(const float* x, float* y, int n, float edge0, float edge1) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = smoothstep(edge0, edge1, x[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK) inlined(const float* x, float* y, int n, float edge0, float edge1) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) {
    float t = fminf(fmaxf((x[i] - edge0) / (edge1 - edge0), 0.0f), 1.0f);
    y[i] = t * t * (3.0f - 2.0f * t);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK) nested(const float* x, float* y, int n, float edge0, float edge1) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = smoothstep_nested(edge0, edge1, x[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
called__swapped(const float* x, float* y, int n, float edge0, float edge1) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = smoothstep(edge1, edge0, x[i]);  // <-- BUG: edges swapped
}

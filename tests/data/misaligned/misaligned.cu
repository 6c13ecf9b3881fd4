// Loads and stores must be aligned to their access size (PTX ISA 6.4; the GPU raises a
// misaligned-address error). shifted: each thread loads a float 2 bytes past x[i]. vec4: float4
// loads of 16 bytes at x + 4*i (aligned to 4 only). aligned: the same loads at x + i (correct).
extern "C" __global__ void shifted(const float *x, float *y) {
  int i = threadIdx.x;
  y[i] = *(const float *)((const char *)(x + i) + 2);
}
extern "C" __global__ void vec4(const float *x, float *y) {
  int i = threadIdx.x;
  float4 v = *(const float4 *)(x + i);
  y[i] = v.x + v.w;
}
extern "C" __global__ void aligned(const float *x, float *y) {
  int i = threadIdx.x;
  float4 v = *(const float4 *)(x + 4 * i);
  y[i] = v.x + v.w + x[i];
}

// a/util.h
__device__ __noinline__ void fill(float* s, const float* in, unsigned t) {
  s[t] = in[t];
}
__device__ __noinline__ float neighbor_safe(const float* s, unsigned t) {
  return s[t];
}

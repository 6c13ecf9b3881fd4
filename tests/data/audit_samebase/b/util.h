// b/util.h
__device__ __noinline__ float neighbor(const float* s, unsigned t) {
  return s[(t + 1) % 64];   // racy read, no barrier before it
}

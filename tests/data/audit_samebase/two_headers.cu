#include "a/util.h"
#include "b/util.h"
extern "C" __global__ void k(const float* in, float* out) {
  __shared__ float s[64];
  unsigned t = threadIdx.x;
  fill(s, in, t);
  out[t] = neighbor(s, t);
}

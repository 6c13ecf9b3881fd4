// Pointers selected by a scalar parameter and passed by address to a device function, which
// loads them back from the caller's local memory (c ? A : B, then *in, *out).
__device__ __noinline__ void move(char **in, char **out) {
  char t = (*in)[threadIdx.x];
  (*out)[threadIdx.x] = t;
  *out = *in;
}

__device__ __noinline__ void move_racy(char **in, char **out) {
  char t = (*in)[threadIdx.x];
  (*out)[0] = t;  // every thread writes element 0
  *out = *in;
}

extern "C" __global__ void pick(char *A, char *B, char c) {
  char *x = c ? A : B;
  char *y = c ? B : A;
  move(&x, &y);
  move(&x, &y);
}

extern "C" __global__ void pick_race(char *A, char *B, char c) {
  char *x = c ? A : B;
  char *y = c ? B : A;
  move_racy(&x, &y);
}

// the same selection inlined: no local memory, a selp of the two pointers
extern "C" __global__ void pick_inline(char *A, char *B, char c) {
  char *x = c ? A : B;
  char *y = c ? B : A;
  y[threadIdx.x] = x[threadIdx.x];
}

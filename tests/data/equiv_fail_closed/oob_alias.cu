// Equivalence must not read one buffer's bytes through another's pointer.
// reference: c[i] = b[i]
extern "C" __global__ void ref(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = b[i];
}
// reads a[i + 512]: past the end of a (n = 256); in a layout with a after b's start
// 2048 bytes on, it would read b[i]
extern "C" __global__ void past_a(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i + 512];
}
// the same through a pointer chosen at run time (not derived from one parameter)
extern "C" __global__ void past_chosen(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float* p = n > 0 ? a : b;
  if (i < n) c[i] = p[i + 512];
}

// Candidate clobbers its input a (not an output); outputs equal.
extern "C" __global__ void copy_clobber_a(float* a, float* b, float* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) { float v = a[i]; a[i] = 0.0f; out[i] = v; }
}
extern "C" __global__ void copy(const float* a, float* b, float* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) out[i] = a[i];
}
extern "C" __global__ void br_clobber(float* a, float* b, float* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) { float v = a[i]; a[i] = 0.0f; out[i] = (v > b[i]) ? v : b[i]; }
}
extern "C" __global__ void br_ref(float* a, float* b, float* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) { float v = a[i]; out[i] = (v > b[i]) ? v : b[i]; }
}

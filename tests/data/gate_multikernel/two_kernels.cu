extern "C" __global__ void good(const float* in, float* out) {
  __shared__ float s[64];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  out[t] = s[(t + 1) % 64];
}
extern "C" __global__ void bad(const float* in, float* out) {
  __shared__ float s[64];
  unsigned t = threadIdx.x;
  s[t] = in[t];
  out[t] = s[(t + 1) % 64];
}

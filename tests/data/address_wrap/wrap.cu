// wrap: reads s[(t - 64) / 2 + 64], always in [32, 96). nvcc folds the +64 elements into the
// ld.shared offset (+256 bytes), so for t < 64 the 32-bit address register holds a negative
// byte offset: the address is the 32-bit sum, which wraps (PTX ISA 6.4.1 address arithmetic).
extern "C" __global__ void __launch_bounds__(128) wrap(float *out) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = (float)t;
  __syncthreads();
  out[blockIdx.x * 128 + t] = s[(t - 64) / 2 + 64];
}

// Scatter 1024 elements with a stride: out[(i * s) mod 1024] = in[i]. An odd multiplier
// is a permutation of 0..1023, so the stride is forced odd.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
strided_scatter(const float* in, float* out, unsigned stride) {
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  out[(i * (stride | 1u)) & 1023u] = in[i];
}

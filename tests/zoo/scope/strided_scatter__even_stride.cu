// Scatter 1024 elements with a stride: out[(i * stride) mod 1024] = in[i].
// Seeded race: an even stride is not a permutation, so two threads write one element
// (race-free for odd strides only).
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
strided_scatter(const float* in, float* out, unsigned stride) {
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  out[(i * stride) & 1023u] = in[i];  // BUG: stride may be even
}

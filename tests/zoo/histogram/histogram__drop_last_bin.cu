// 64-bin histogram of data[i] % NBINS. Each block counts into shared bins
// with shared-memory atomics, then adds its non-zero bins to the global
// histogram with global atomics (the return value is unused -> red.global).
// Grid-stride loop, so any grid size covers all n elements.
// Seeded bug: the flush skips the last bin (threadIdx.x < NBINS - 1), so its
// per-block counts never reach the global histogram.
#define BLOCK 256
#define NBINS 64

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram(const unsigned* data, unsigned* bins, int n) {
  __shared__ unsigned sbins[NBINS];
  if (threadIdx.x < NBINS) {
    sbins[threadIdx.x] = 0;
  }
  __syncthreads();
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    atomicAdd(&sbins[data[i] % NBINS], 1u);
  }
  __syncthreads();
  if (threadIdx.x < NBINS - 1) {
    unsigned count = sbins[threadIdx.x];
    if (count != 0) {
      atomicAdd(&bins[threadIdx.x], count);
    }
  }
}

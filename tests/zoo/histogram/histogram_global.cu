// Reference for equivalence: the 64-bin histogram of data[i] % NBINS with every
// thread adding 1 to its global bin directly (no shared-memory privatization).
// Same contract as histogram.cu: bins[b] += count of data[i] % NBINS == b, i < n.
#define BLOCK 256
#define NBINS 64

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_global(const unsigned* data, unsigned* bins, int n) {
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) {
    atomicAdd(&bins[data[i] % NBINS], 1u);
  }
}

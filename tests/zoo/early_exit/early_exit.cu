// A block-wide shared-memory reversal behind an input check: every CTA whose ctl[0] is
// below threshold returns before the barrier. With the random inputs (integers in
// [0, 100)) and threshold 100 no CTA reaches the barrier.
extern "C" __global__ void early_exit(const int* ctl, const float* in, float* out, int threshold) {
  __shared__ float tile[128];
  if (ctl[0] < threshold) return;
  unsigned int i = blockIdx.x * 128 + threadIdx.x;
  tile[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = tile[127 - threadIdx.x];
}

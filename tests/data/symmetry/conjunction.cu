// A barrier split that needs blockIdx.x == 3 AND blockIdx.y == 5: only CTA (3,5) completes one
// instance of barrier 0 with two different bar.sync instructions (barrier.divergence). A CTA
// chosen for each %ctaid test alone ((3, y) and (x, 5)) takes no split path.
extern "C" __global__ void conjunction(float* out) {
  if (blockIdx.x == 3) {
    if (threadIdx.x < 32) __syncthreads();
  }
  if (blockIdx.y == 5) {
    if (threadIdx.x >= 32) __syncthreads();
  }
  out[(blockIdx.y * gridDim.x + blockIdx.x) * 64 + threadIdx.x] = 1.0f;
}

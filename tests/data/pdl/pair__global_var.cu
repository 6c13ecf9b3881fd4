// Primary publishes a per-CTA count into a __device__ global; the dependent reads it before
// griddepcontrol.wait (bug: the primary may still be running).
__device__ int g_count[4];

extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cudaTriggerProgrammaticLaunchCompletion();
  if (i < n) y[i] = 2.0f * x[i];
  if (threadIdx.x == 0) g_count[blockIdx.x] = blockIdx.x + 1;
}

extern "C" __global__ void consumer(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int c = g_count[blockIdx.x];     // BUG: read of the primary's output before the wait
  cudaGridDependencySynchronize();
  if (i < n) z[i] = y[i] * c;
}

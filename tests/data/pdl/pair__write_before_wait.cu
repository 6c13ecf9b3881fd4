// Seeded bug: consumer overwrites x, which the producer reads, before griddepcontrol.wait
// (write after read across the grids).
extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents
}

extern "C" __global__ void consumer(float* x, const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.0f;
  cudaGridDependencySynchronize();  // griddepcontrol.wait
  if (i < n) z[i] = y[i];
}

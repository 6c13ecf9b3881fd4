// Seeded bug: consumer loads y, the producer's output, before griddepcontrol.wait (a load hoisted
// above the wait): it may read y while the producer still writes it.
extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents
}

extern "C" __global__ void consumer(const float* y, const float* w, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float yi = i < n ? y[i] : 0.0f;
  cudaGridDependencySynchronize();  // griddepcontrol.wait
  if (i < n) z[i] = yi + w[i];
}

// Seeded bug: consumer never executes griddepcontrol.wait (a build whose wait compiled to
// nothing): none of its accesses is ordered after the producer's.
extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents
}

extern "C" __global__ void consumer(const float* y, const float* w, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + w[i];
}

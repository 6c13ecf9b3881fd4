// A programmatic dependent launch (PDL) pair: producer computes y = 2x and lets its dependent
// start early; consumer loads w (independent of the producer) before griddepcontrol.wait and
// y (the producer's output) only after it.
extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
  cudaTriggerProgrammaticLaunchCompletion();  // griddepcontrol.launch_dependents
}

extern "C" __global__ void consumer(const float* y, const float* w, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float wi = i < n ? w[i] : 0.0f;
  cudaGridDependencySynchronize();  // griddepcontrol.wait
  if (i < n) z[i] = y[i] + wi;
}

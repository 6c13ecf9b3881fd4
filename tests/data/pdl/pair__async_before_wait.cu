// Dependent grid prefetches the primary's output y into shared memory with cp.async BEFORE
// griddepcontrol.wait (bug: the copy may read y while the primary is still writing it), then
// waits on the grid dependency and on the copy.
extern "C" __global__ void producer(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cudaTriggerProgrammaticLaunchCompletion();
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void consumer(const float* y, float* z, int n) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned sa = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(sa), "l"(y + i) : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  cudaGridDependencySynchronize();
  asm volatile("cp.async.wait_all;" ::: "memory");
  if (i < n) z[i] = s[threadIdx.x] + 1.0f;
}

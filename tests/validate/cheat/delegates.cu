// B7 (library delegation), alone in its module: the extern routine leaves the module
// unresolved (ptxas refuses it without a link step that brings the library in).
// PTX: nvcc -arch=sm_90a -lineinfo -ptx -rdc=true delegates.cu -o delegates.ptx
extern "C" __device__ float lib_add(float x, float y);
extern "C" __global__ void delegates(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = lib_add(a[i], b[i]);
}


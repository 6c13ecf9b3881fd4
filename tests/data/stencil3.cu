// Compiled with: nvcc -arch=sm_90a -lineinfo -ptx stencil3.cu (the .file path made relative, as tests/zoo/regen_cuda.py does).
// A three-point stencil whose block loads a tile of 64 points and a halo into shared memory.
// Seeded bug: no __syncthreads() between the loads and the reads of the neighbours, so a
// thread reads s[t + 2] before the thread that loads it (in the next warp) has written it.
__global__ void stencil3(const float* in, float* out, int n) {
  __shared__ float s[66];
  int t = threadIdx.x;
  int i = blockIdx.x * 64 + t;
  s[t + 1] = i < n ? in[i] : 0.0f;
  if (t == 0) {
    s[0] = 0.0f;
    s[65] = 0.0f;
  }
  if (i < n) out[i] = s[t] + s[t + 1] + s[t + 2];
}

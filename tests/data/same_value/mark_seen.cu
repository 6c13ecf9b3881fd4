// Every thread in range marks the launch as seen: racing writes of one constant.
extern "C" __global__ void mark_seen(int* seen, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = 1.0f;
    *seen = 1;
  }
}

// b[i] = a[i + off]: an offset past a's end by more than the interpreter's red zone lands in b.
extern "C" __global__ void ovf(const float* a, float* b, int n, int off) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i + off];
}

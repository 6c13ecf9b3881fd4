// A kernel that never finishes (spins on a flag nothing sets): a hang must be a verdict.
// PTX: nvcc -arch=sm_90a -lineinfo -ptx hang.cu -o hang.ptx
extern "C" __global__ void spin_forever(const float *a, const float *b, float *c, int n) {
  volatile int *flag = (volatile int *)&c[0];
  if (threadIdx.x == 0 && blockIdx.x == 0)
    while (flag[n] != 0x7eadbeef) {
    }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

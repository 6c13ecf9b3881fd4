// Reference: the floor of the mean of two ints, computed in 64 bits (never overflows).
extern "C" __global__ void midpoint(const int* a, const int* b, int* m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i] = (int)(((long long)a[i] + (long long)b[i]) >> 1);
}

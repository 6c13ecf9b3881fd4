// Candidate: the same floor of the mean in 32 bits without overflow: halve each operand and
// add back the carry of the two low bits. Equal to midpoint.cu for every input.
extern "C" __global__ void midpoint(const int* a, const int* b, int* m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i] = (a[i] >> 1) + (b[i] >> 1) + (a[i] & b[i] & 1);
}

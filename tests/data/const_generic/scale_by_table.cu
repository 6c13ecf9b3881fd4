// A table in constant memory read through a generic pointer (cvta.const).
__constant__ float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};

extern "C" __global__ void scale_by_table(const float* __restrict__ in, float* __restrict__ out, int n, int use_table) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float* table = use_table ? coef : in;
  if (i < n) out[i] = in[i] * table[i % 4];
}

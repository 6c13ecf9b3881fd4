// Module variables with initializers of every kind nvcc emits: float and double scalars
// (0f / 0d literals), a constant float array, a pointer to another variable (generic(x)).
__device__ float scale = 1.5f;
__constant__ float coef[4] = {0.25f, -0.5f, 2.0f, 8.0f};
__device__ double bias = 0.125;
__device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ float* table_ptr = table;
__device__ float offset = 1000.0f;

extern "C" __global__ void scaled(const float* in, float* out) {
  unsigned t = threadIdx.x;
  out[t] = in[t] * scale * coef[t % 4] + (float)bias + table_ptr[t % 4];
}

// the index comes from a float variable: 1000 + t, far past out[64]
extern "C" __global__ void offset_store(float* out) {
  unsigned t = threadIdx.x;
  out[t + (int)offset] = 1.0f;
}

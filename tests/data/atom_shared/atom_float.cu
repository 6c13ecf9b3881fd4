// Floating-point atomic adds on shared memory at the subnormal edge (PTX ISA §9.7.13.5: atom.add.f32
// flushes subnormal inputs and results to sign-preserving zero; .noftz f16/bf16 and f64 keep them).
// Each thread adds into its own slot (no two atomics on one address: the result is deterministic).
// Lane classes (t % 4): 0 normal operands, 1 a subnormal addend, 2 a subnormal slot value, 3 normal
// operands whose sum is subnormal. Conformance inputs on the GPU (bench/conformance.py, family
// data_atom_shared).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ void operands(float x, float y, int t, float* a, float* b) {
  const float tiny = 0x1p-127f;  // a subnormal f32 scale
  switch (t & 3) {
    case 0: *a = x; *b = y; break;
    case 1: *a = x; *b = y * tiny; break;
    case 2: *a = x * tiny; *b = y; break;
    default: *a = 0x1.8p-126f; *b = -0x1p-126f * (1.0f + 0.25f * (y > 0.0f)); break;
  }
}

extern "C" __global__ void add_f32(const float* x, const float* y, float* out) {
  __shared__ float s[128];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  float a, b;
  operands(x[i], y[i], t, &a, &b);
  s[t] = a;
  __syncthreads();
  atomicAdd(&s[t], b);
  __syncthreads();
  out[i] = s[t];
}

extern "C" __global__ void add_f16(const float* x, const float* y, float* out) {
  __shared__ __half s[128];
  __shared__ __nv_bfloat16 sb[128];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  float a = x[i], b = y[i];
  if (t & 1) b *= 0x1p-16f;  // a subnormal f16 addend
  if (t & 2) a *= 0x1p-16f;
  s[t] = __float2half_rn(a);
  sb[t] = __float2bfloat16_rn(a * ((t & 2) ? 0x1p-120f : 1.0f));
  __syncthreads();
  atomicAdd(&s[t], __float2half_rn(b));
  atomicAdd(&sb[t], __float2bfloat16_rn(b * ((t & 1) ? 0x1p-120f : 1.0f)));
  __syncthreads();
  out[2 * i] = __half2float(s[t]);
  out[2 * i + 1] = __bfloat162float(sb[t]);
}

extern "C" __global__ void add_f64(const float* x, const float* y, double* out) {
  __shared__ double s[128];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  const double tiny = 0x1p-1040;  // a subnormal f64 scale
  double a = x[i], b = y[i];
  if (t & 1) b *= tiny;
  if (t & 2) a *= tiny;
  s[t] = a;
  __syncthreads();
  atomicAdd(&s[t], b);
  __syncthreads();
  out[i] = s[t];
}

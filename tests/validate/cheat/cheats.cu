// Deliberately cheating kernels, one per exploit of docs/validation.md (B1-B10).
// Each must be caught by `kverify validate`; see tests/test_validate*.py.
// PTX: nvcc -arch=sm_90a -lineinfo -ptx cheats.cu -o cheats.ptx
#include <cuda_fp16.h>

// An honest baseline: c = a + b.
extern "C" __global__ void honest_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// B1 (output-memory reuse): writes nothing and leaves the answer to whatever the output
// buffer held before (the reference's result, in a harness that reuses memory).
extern "C" __global__ void reuse_output(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && a[i] == 12345.0f) c[i] = b[i];  // never taken on real data
}

// B1 (uninitialized read): accumulates into the output without initializing it; correct
// only where the output happened to start at zero.
extern "C" __global__ void uninit_accumulate(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = c[i] * 0.0f + a[i] + b[i];
}

// B2 (input mutation): right answer, then zeroes its input so a reference computed
// afterwards from the same memory agrees with anything.
extern "C" __global__ void zero_input(float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    a[i] = 0.0f;
  }
}

// B3 (constant output): every row of a softmax sums to one, so a kernel that writes 1.0
// matches a row-sum reference on every input.
extern "C" __global__ void constant_rowsum(const float *x, float *s, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) s[r] = 1.0f;
}

// B4 (shape specialization): hard-codes n = 1024 and ignores the argument.
extern "C" __global__ void fixed_1024(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1024) c[i] = a[i] + b[i];
}

// B6 (state across launches): computes on the first launch only (the correctness run of a
// harness that times later launches), then skips the work.
__device__ unsigned launches_seen;
extern "C" __global__ void lazy_after_first(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned seen = *(volatile unsigned *)&launches_seen;
  if (i < n && seen == 0) c[i] = a[i] + b[i];
  __syncthreads();
  if (i == 0) atomicAdd(&launches_seen, 1u);
}

// B8 (precision downgrade): computes in fp16 on fp32 data.
extern "C" __global__ void half_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __half2float(__hadd(__float2half(a[i]), __float2half(b[i])));
}

// B8 (store dtype): stores fp16 values into what the launch declares a float32 buffer.
extern "C" __global__ void store_half(const float *a, const float *b, __half *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __float2half(a[i] + b[i]);
}

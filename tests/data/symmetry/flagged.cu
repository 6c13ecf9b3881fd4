// Control that depends on loaded data, not only on blockIdx: CTAs whose flag is 5 take another
// path. `flagged` splits its barrier there (barrier.divergence in those CTAs only); `flagged_loop`
// runs a barrier loop as many times as the CTA's flag says; `positive` only guards a global
// store by the data (no barrier, no shared memory: the representatives still stand for all).
extern "C" __global__ void flagged(const int* flags, float* out) {
  __syncthreads();
  if (flags[blockIdx.x] == 5) {
    if (threadIdx.x < 64) __syncthreads();
  }
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = threadIdx.x;
}

extern "C" __global__ void flagged_loop(const int* flags, float* out) {
  __shared__ float s[128];
  float acc = 0.f;
  for (int i = 0; i < flags[blockIdx.x]; ++i) {
    s[threadIdx.x] = acc + i;
    __syncthreads();
    acc += s[127 - threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * 128 + threadIdx.x] = acc;
}

extern "C" __global__ void positive(const float* x, float* y) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (x[i] > 0.f) y[i] = x[i];
}

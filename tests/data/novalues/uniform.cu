//pass
//--blockDim=64 --gridDim=4

// Barriers under conditions and in loops whose values the launch does not give: kverify decides
// barrier uniformity for every value of the scalar parameters (two arbitrary threads of a CTA).

// uniform for every x: every thread of the CTA takes the same branch
__global__ void param_guard(int *out, int x) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = gid;
  if (x == 0)
    __syncthreads();
  out[gid] += 1;
}

// divergent for 0 < x < 64: the threads below x wait at a barrier the others skip
__global__ void tid_guard(int *out, int x) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = gid;
  if (threadIdx.x < x)
    __syncthreads();
  out[gid] += 1;
}

// the trip count is a parameter: every thread runs as many barriers
__global__ void param_loop(int *out, int n) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = 0;
  for (int i = 0; i < n; i++) {
    out[gid] += i;
    __syncthreads();
  }
}

// the trip count depends on the thread: thread t runs t + n barriers
__global__ void tid_loop(int *out, int n) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = 0;
  for (int i = 0; i < threadIdx.x + n; i++) {
    out[gid] += 1;
    __syncthreads();
  }
}

// uniform barriers around shared memory: conformance and deadlock freedom hold for every n, but
// the bounds and initialization of the shared accesses are not checked without values
__global__ void shared_rotate(int *out, int n) {
  __shared__ int tile[64];
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = gid * n;
  __syncthreads();
  out[gid] = tile[(threadIdx.x + 1) % 64];
}

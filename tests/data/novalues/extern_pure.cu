//pass
//--blockDim=64 --gridDim=2

// Calls of a function the file declares and never defines. With --extern-summary nondet=pure
// its result is any value, for each call and each thread.

__device__ int nondet(void);

// loops on nondet(): nothing but registers depends on it
__global__ void count_nondet(int *out) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int n = 0;
  while (nondet()) {
    n++;
    while (nondet() > 3)
      n += 2;
  }
  out[gid] = n;
}

// the summary must not hide a race on memory the kernel itself writes: two threads may get
// the same index
__global__ void store_at_nondet(int *out) {
  int v = nondet();
  out[v] = threadIdx.x;
}

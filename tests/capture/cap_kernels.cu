// Kernels of cap_driver.c, the no-GPU capture tests' program (tests/test_capture_driver.py).
// cap_kernels.ptx is this file compiled with: nvcc -arch=sm_90a -ptx -lineinfo cap_kernels.cu
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// bins has 128 counters: in bounds only while every byte of data is < 128
extern "C" __global__ void hist(const unsigned char* data, int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i]], 1);
}

__device__ int g_limit;
__constant__ int c_off;
// writes p[0 .. g_limit): in bounds only while the host set g_limit to at most p's length
extern "C" __global__ void use_globals(float* p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < g_limit) p[i + c_off] = 1.0f;
}

// every CTA of a cluster writes slot [threadIdx.x] of rank 0's shared array: a race once a cluster has 2
extern "C" __global__ void to_rank0(float* out) {
  __shared__ float s[128];
  cg::cluster_group c = cg::this_cluster();
  c.map_shared_rank(s, 0)[threadIdx.x] = (float)blockIdx.x;
  c.sync();
  if (c.block_rank() == 0) out[blockIdx.x * 128 + threadIdx.x] = s[threadIdx.x];
}

extern "C" __global__ void scale(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 2.0f;
}

// [b, e): e is one past the end of b's allocation
extern "C" __global__ void range(float* b, const float* e) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (b + i < e) b[i] *= 2.0f;
}

// Cluster of 2 CTAs, one warp each. In every CTA lanes 0-15 take the cluster barrier and then
// release lanes 16-31 through a shared flag; lanes 16-31 spin on the flag and never arrive.
// barrier.cluster.wait waits for ALL non-exited threads of the cluster to arrive (§9.7.13
// barrier.cluster): lanes 0-15 wait for lanes 16-31, which wait for lanes 0-15: hang.
extern "C" __global__ void __cluster_dims__(2, 1, 1) split_cluster(const float* in, float* out) {
  __shared__ volatile int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncwarp();
  int lane = threadIdx.x & 31;
  if (lane < 16) {
    asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
    if (lane == 0) flag = 1;
  } else {
    while (flag == 0) { }
  }
  out[blockIdx.x * 32 + threadIdx.x] = in[blockIdx.x * 32 + threadIdx.x] + 1.0f;
}

// Warp 0 is split: lanes 0-15 sync on barrier 1, lanes 16-31 on barrier 2 (non-.aligned
// barrier.sync, legal in divergent code). Warp 1 syncs on 1 then 2. Each barrier needs 64
// threads; only 48 ever arrive (and each warp-0 thread waits for the rest of its warp, §9.7.13.1).
extern "C" __global__ void split_named(const float* in, float* out) {
  __shared__ float s[64];
  int lane = threadIdx.x & 31;
  s[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
  if (threadIdx.x < 32) {
    if (lane < 16) {
      asm volatile("barrier.sync 1, 64;" ::: "memory");
    } else {
      asm volatile("barrier.sync 2, 64;" ::: "memory");
    }
  } else {
    asm volatile("barrier.sync 1, 64;" ::: "memory");
    asm volatile("barrier.sync 2, 64;" ::: "memory");
  }
  out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x ^ 32];
}

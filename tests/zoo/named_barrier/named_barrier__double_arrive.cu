// Producer/consumer hand-off through one shared buffer with named barriers.
// Block of 128 threads: warps 0-1 (64 threads) produce, warps 2-3 consume.
//   barrier 1 "full":  producers bar.arrive, consumers bar.sync (64 + 64 = 128)
//   barrier 2 "empty": consumers bar.arrive, producers bar.sync (64 + 64 = 128)
// Each block moves num_tiles tiles of TILE floats: out = 2 * reversed(in) + 1
// per tile (consumer thread c reads the element produced by thread TILE-1-c).
// Seeded bug: the producers arrive on barrier 1 twice per tile.
#define NTHREADS 128
#define TILE 64

extern "C" __global__ void __launch_bounds__(NTHREADS)
named_barrier(const float* in, float* out, int num_tiles) {
  __shared__ float buf[TILE];
  int tid = threadIdx.x;
  const float* src = in + (size_t)blockIdx.x * num_tiles * TILE;
  float* dst = out + (size_t)blockIdx.x * num_tiles * TILE;
  if (tid < TILE) {
    // producer warps 0-1
    for (int t = 0; t < num_tiles; ++t) {
      if (t > 0) {
        asm volatile("bar.sync 2, 128;" ::: "memory");  // wait until consumers freed buf
      }
      buf[tid] = 2.0f * src[t * TILE + tid];
      asm volatile("bar.arrive 1, 128;" ::: "memory");  // buf full
      asm volatile("bar.arrive 1, 128;" ::: "memory");  // BUG: second arrive on id 1 before the barrier resets (surplus arrival)
    }
  } else {
    // consumer warps 2-3
    int c = tid - TILE;
    for (int t = 0; t < num_tiles; ++t) {
      asm volatile("bar.sync 1, 128;" ::: "memory");  // wait until buf is full
      dst[t * TILE + c] = buf[TILE - 1 - c] + 1.0f;
      if (t + 1 < num_tiles) {
        asm volatile("bar.arrive 2, 128;" ::: "memory");  // buf free
      }
    }
  }
}

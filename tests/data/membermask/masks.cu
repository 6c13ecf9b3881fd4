// Warp-collective membermasks (PTX ISA 9.7.9.6 shfl.sync: undefined when an executing thread is
// not in its membermask, or a thread its membermask names does not execute the instruction).
// halves: each half-warp shuffles within itself (a tiled partition of 16: lane-dependent masks,
// every lane in its own mask) -- correct.
extern "C" __global__ void halves(const float *x, float *y) {
  int t = threadIdx.x;
  unsigned m = (t & 16) ? 0xffff0000u : 0x0000ffffu;
  y[t] = __shfl_sync(m, x[t], 0, 16);
}

// self_excluded: lanes 16-31 run the shuffle with the lower half's mask, which leaves them out.
extern "C" __global__ void self_excluded(const float *x, float *y) {
  int t = threadIdx.x;
  unsigned m = 0x0000ffffu;
  y[t] = __shfl_sync(m, x[t], 0, 16);
}

// shifted: lane i's mask is 0xffffffff << i; lane 0's names lane 1, whose mask differs.
extern "C" __global__ void shifted(const float *x, float *y) {
  int t = threadIdx.x;
  unsigned m = 0xffffffffu << t;
  y[t] = __shfl_sync(m, x[t], 31);
}

// full: every lane shuffles with the full mask -- correct (one mask for all lanes).
extern "C" __global__ void full(const float *x, float *y) {
  int t = threadIdx.x;
  y[t] = __shfl_sync(0xffffffffu, x[t], 0);
}

// partial_full: only lanes 0-15 run a shuffle whose (one, full) mask names all 32 lanes.
extern "C" __global__ void partial_full(const float *x, float *y) {
  int t = threadIdx.x;
  if (t < 16) y[t] = __shfl_sync(0xffffffffu, x[t], 0);
}

// Warp collectives checked without parameter values (kverify/verifier/uniform.py): a full-mask
// collective must be executed by every lane of the warp (PTX ISA 9.7.9.6).
// shfl_all: every lane shuffles (n only bounds the store) -- correct.
extern "C" __global__ void shfl_all(float *y, int n) {
  float v = y[threadIdx.x];
  v = __shfl_sync(0xffffffffu, v, 0);
  if (threadIdx.x < n) y[threadIdx.x] = v;
}

// shfl_div: only the lanes below n shuffle with the full mask: for n = 16 lanes 16-31 are named
// and do not execute it (undefined).
extern "C" __global__ void shfl_div(float *y, int n) {
  float v = y[threadIdx.x];
  if (threadIdx.x < n) v = __shfl_sync(0xffffffffu, v, 0);
  y[threadIdx.x] = v;
}

// vote_active: the mask comes from __activemask() (a register): not covered without values.
extern "C" __global__ void vote_active(unsigned *y, int n) {
  if (threadIdx.x < n) y[threadIdx.x] = __ballot_sync(__activemask(), threadIdx.x & 1);
}

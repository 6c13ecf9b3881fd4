// flag_handoff__missing_fence (seeded bug: no __threadfence on either side): a volatile
// (relaxed, system-scope) flag store and load with no fence: the flag accesses are morally
// strong, but nothing orders the payload writes before the payload reads (PTX ISA §8.8).
extern "C" __global__ void flag_handoff(const int *in, int *payload, unsigned *flag, int *out) {
  const int t = threadIdx.x;
  if (blockIdx.x == 0) {
    payload[t] = in[t] * 3;
    __syncthreads();
    if (t == 0) {
      *(volatile unsigned *)flag = 12345;
    }
  } else {
    if (t == 0) {
      while (*(volatile unsigned *)flag != 12345)  // any start value but 12345
        ;
    }
    __syncthreads();
    out[t] = payload[t];
  }
}

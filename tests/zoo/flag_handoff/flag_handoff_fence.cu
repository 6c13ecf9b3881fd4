// flag_handoff_fence: the flag handoff of flag_handoff.cu with the fence idiom: a volatile
// (relaxed, system-scope) flag store after __threadfence() (fence.sc.gpu), and a volatile
// flag load followed by __threadfence(): fence-fence synchronization (PTX ISA §8.8).
extern "C" __global__ void flag_handoff(const int *in, int *payload, unsigned *flag, int *out) {
  const int t = threadIdx.x;
  if (blockIdx.x == 0) {
    payload[t] = in[t] * 3;
    __syncthreads();
    if (t == 0) {
      __threadfence();
      *(volatile unsigned *)flag = 12345;
    }
  } else {
    if (t == 0) {
      while (*(volatile unsigned *)flag != 12345)  // any start value but 12345
        ;
      __threadfence();
    }
    __syncthreads();
    out[t] = payload[t];
  }
}

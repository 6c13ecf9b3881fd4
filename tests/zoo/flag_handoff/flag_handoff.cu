// flag_handoff: CTA 0 writes a payload to global memory and raises a flag; CTA 1 waits
// for the flag, then copies the payload to out. The flag store releases and the flag
// load acquires (st.release.gpu / ld.acquire.gpu), so the payload writes happen before
// the payload reads (synchronizes-with, PTX ISA §8.8). Grid 2x1x1, block 32x1x1.
extern "C" __global__ void flag_handoff(const int *in, int *payload, unsigned *flag, int *out) {
  const int t = threadIdx.x;
  if (blockIdx.x == 0) {
    payload[t] = in[t] * 3;
    __syncthreads();
    if (t == 0)
      asm volatile("st.release.gpu.global.u32 [%0], 12345;" ::"l"(flag) : "memory");
  } else {
    if (t == 0) {
      unsigned f = 0;  // the flag starts with any value but 12345
      while (f != 12345)
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flag) : "memory");
    }
    __syncthreads();
    out[t] = payload[t];
  }
}

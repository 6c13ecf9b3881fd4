// Lines 7-9 run only when ctl[0] is 12345: a global race, a shared race and a store far past out.
extern "C" __global__ void untaken(const int* ctl, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = (float)threadIdx.x;
  asm volatile("bar.sync 1, 128;");
  out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
  if (ctl[0] == 12345) {
    out[0] = (float)threadIdx.x;
    s[0] = (float)threadIdx.x;
    out[1000000] = 1.0f;
  }
}

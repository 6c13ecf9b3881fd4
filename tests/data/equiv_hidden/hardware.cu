// Values the hardware chooses: which SM (%smid), warp slot (%warpid) or grid (%gridid) runs a thread.
__device__ __forceinline__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned warpid() { unsigned r; asm volatile("mov.u32 %0, %%warpid;" : "=r"(r)); return r; }
extern "C" __global__ void copy(const int* a, int* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) out[i] = a[i];
}
// adds the SM id: differs from copy whenever a CTA runs on an SM other than 0
extern "C" __global__ void c_smid(const int* a, int* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) out[i] = a[i] + (int)smid();
}
// adds %warpid - tid/32: %warpid is the physical warp slot, volatile, not tid/32 (PTX ISA)
extern "C" __global__ void c_warpid(const int* a, int* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) out[i] = a[i] + (int)warpid() - (int)(threadIdx.x / 32);
}
__device__ __forceinline__ unsigned long long gridid() { unsigned long long r; asm volatile("mov.u64 %0, %%gridid;" : "=l"(r)); return r; }
extern "C" __global__ void c_gridid(const int* a, int* out, int n) {
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i < n) out[i] = a[i] + (int)gridid();
}

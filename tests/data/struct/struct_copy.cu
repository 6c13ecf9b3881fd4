// struct_copy: a by-value struct with a count and two pointers (no __grid_constant__).
// Thread i copies in[i] * scale to out[i] for i < n; struct_copy_race also writes out[0]
// from every thread (a global race reached only through the struct's pointer).
struct Args {
  int n;            // offset 0
  float scale;      // offset 4
  const float* in;  // offset 8
  float* out;       // offset 16
};

extern "C" __global__ void struct_copy(Args a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.out[i] = a.in[i] * a.scale;
}

extern "C" __global__ void struct_copy_race(Args a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.out[0] = a.in[i] * a.scale;
}

// struct_copy_gc: the same through a __grid_constant__ struct read by address (generic loads
// from the parameter, as CUTLASS reads its Params).

extern "C" __global__ void struct_copy_gc(const __grid_constant__ Args a) {
  const Args* pa = &a;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < pa->n) pa->out[i] = pa->in[i] * pa->scale;
}

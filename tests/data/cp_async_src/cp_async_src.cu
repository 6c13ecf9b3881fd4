// The optional operands of cp.async (PTX ISA 9.7.9.25.3.1): a predicate ignore-src (true: the
// destination gets zeros, the source is not read), an integer src-size (the bytes read, the
// rest zero-filled), and with .L2::cache_hint a 64-bit cache policy last.
__device__ __forceinline__ unsigned smem(float* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void drain(float* c, float* s, int i) {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  c[i] = s[i];
}

// ignore-src = (flag != 0): flag 0 copies a[i], flag 1 writes zeros
extern "C" __global__ void ignore_src(const float* a, float* c, unsigned flag) {
  __shared__ float s[32];
  int i = threadIdx.x;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %2, 0;\n"
               "cp.async.ca.shared.global [%0], [%1], 4, p; }\n" :: "r"(smem(&s[i])), "l"(a + i), "r"(flag) : "memory");
  drain(c, s, i);
}

// src-size: n bytes of a[i] read, the rest of the 4 zero-filled
extern "C" __global__ void src_size(const float* a, float* c, unsigned n) {
  __shared__ float s[32];
  int i = threadIdx.x;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(smem(&s[i])), "l"(a + i), "r"(n) : "memory");
  drain(c, s, i);
}

// a cache policy (any value, 0 here) is no src-size: a[i] is copied
extern "C" __global__ void cache_hint(const float* a, float* c, unsigned long long pol) {
  __shared__ float s[32];
  int i = threadIdx.x;
  asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2;\n" :: "r"(smem(&s[i])), "l"(a + i), "l"(pol) : "memory");
  drain(c, s, i);
}

extern "C" __global__ void copy(const float* a, float* c) { int i = threadIdx.x; c[i] = a[i]; }
extern "C" __global__ void zero(const float* a, float* c) { int i = threadIdx.x; c[i] = 0.0f; }

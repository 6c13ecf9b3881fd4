// dp4a / dp2a at the edges of the 32-bit range (PTX ISA §9.7.1.23, §9.7.1.24): the accumulator is
// moved next to INT32_MAX / INT32_MIN (or UINT32_MAX / 0), so a wrapping result and a widened one
// differ. Conformance inputs on the GPU (bench/conformance.py, family data_dp4a).
//
// forms: thread i computes the eight forms of dp4a (a and b signed or unsigned) and dp2a (.lo/.hi)
//   from its a, b and an accumulator c near a limit of the range.
// dot_clamp: C++ with a 64-bit accumulator, clamped to the int32 range; the result must never wrap.
#include <cstdint>

__device__ __forceinline__ int32_t edge(uint32_t c, int i) {
  // within 2^16 of INT32_MAX for even threads, of INT32_MIN for odd ones
  return (i & 1) ? (int32_t)(0x80000000u + (c & 0xFFFFu)) : (int32_t)(0x7FFFFFFFu - (c & 0xFFFFu));
}

#define FORM(k, op)                                                           \
  asm("" op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(cc)); out[8 * i + (k)] = r

extern "C" __global__ void forms(const uint32_t* av, const uint32_t* bv, const uint32_t* cv, int32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t a = av[i] * 0x01010101u ^ cv[i], b = bv[i] * 0x02040811u;
  const int32_t cc = edge(cv[i], i);
  int32_t r;
  FORM(0, "dp4a.s32.s32");
  FORM(1, "dp4a.u32.u32");
  FORM(2, "dp4a.s32.u32");
  FORM(3, "dp4a.u32.s32");
  FORM(4, "dp2a.lo.s32.s32");
  FORM(5, "dp2a.hi.s32.s32");
  FORM(6, "dp2a.lo.u32.u32");
  FORM(7, "dp2a.hi.s32.u32");
}

extern "C" __global__ void dot_clamp(const uint32_t* av, const uint32_t* bv, const uint32_t* cv, int32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t a = av[i] * 0x01010101u ^ cv[i], b = bv[i] * 0x02040811u;
  int64_t acc = edge(cv[i], i);
  for (int k = 0; k < 4; ++k)
    acc += (int64_t)(int8_t)(a >> (8 * k)) * (int64_t)(int8_t)(b >> (8 * k));
  out[i] = (int32_t)(acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc);
}

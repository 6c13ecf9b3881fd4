/* kverify's definitions of GPUVerify's annotation intrinsics.
 *
 * Force-included (nvcc -include, NVRTC --pre-include) when a .cu file starts with a GPUVerify
 * test header (line 1 //pass or //xfail:...): such kernels use GPUVerify's intrinsics, which
 * GPUVerify's own cuda.h declares and nvcc does not know. Written for kverify from what
 * GPUVerify documents each intrinsic to mean; kverify/semantics/ir/gpuverify.py and
 * docs/gpuverify.md say how kverify treats each one:
 *
 *   checked       __assert, __global_assert: a failing one is assert.failed (the call of the
 *                 body-less marker __kverify_assert(holds) carries the condition's value)
 *   precondition  __requires, __global_requires, __assume: a run or a proof holds only under
 *                 them (__kverify_requires / __kverify_assume(holds))
 *   evaluated     __implies, __enabled (a thread that evaluates it is enabled), __ite,
 *                 __is_pow2, __mod_pow2
 *   not evaluated the two-thread and access-set predicates (__other_*, __uniform_*, __distinct_*,
 *                 __all, __exclusive, __same_group, __read, __write, __*_offset_bytes, __ptr_base,
 *                 __return_val_*, __old_*, ...): each is a call of a body-less marker
 *                 __kverify_gv<intrinsic> whose result kverify does not know; an assertion or
 *                 precondition that uses one is not decided by it
 *   proof hints   __invariant, __global_invariant, __ensures, __requires_fresh_array, __reads_from,
 *                 __writes_to, __axiom, ...: compiled to nothing (their argument is not evaluated);
 *                 kverify lists them as not checked (annotation.unchecked)
 */
#ifndef KVERIFY_GPUVERIFY_H
#define KVERIFY_GPUVERIFY_H

#ifdef KVERIFY_GPUVERIFY_COOPERATIVE_GROUPS
/* GPUVerify's cuda.h makes cooperative groups available, with free synchronize() functions */
#include <cooperative_groups.h>
namespace cooperative_groups {
__device__ __forceinline__ void synchronize(const grid_group &g) { g.sync(); }
__device__ __forceinline__ void synchronize(const thread_block &t) { t.sync(); }
}
#endif

/* ---- the markers kverify recognizes by name in the PTX (never defined: calls stay calls) */
extern "C" __device__ void __kverify_assert(int holds);
extern "C" __device__ void __kverify_requires(int holds);
extern "C" __device__ void __kverify_assume(int holds);
extern "C" __device__ int __kverify_gv__other_int(int value);
extern "C" __device__ int __kverify_gv__other_bool(int value);
extern "C" __device__ int __kverify_gv__other_ptr_base(const volatile void *p);
extern "C" __device__ int __kverify_gv__read(const volatile void *p);
extern "C" __device__ int __kverify_gv__write(const volatile void *p);
extern "C" __device__ unsigned long long __kverify_gv__read_offset_bytes(const volatile void *p);
extern "C" __device__ unsigned long long __kverify_gv__write_offset_bytes(const volatile void *p);
extern "C" __device__ unsigned long long __kverify_gv__ptr_offset_bytes(const volatile void *p);
extern "C" __device__ int __kverify_gv__ptr_base(const volatile void *p);
extern "C" __device__ unsigned long long __kverify_gv__not_accessed(const volatile void *p);
extern "C" __device__ int __kverify_gv__return_val_int(void);
extern "C" __device__ int __kverify_gv__return_val_bool(void);
extern "C" __device__ void *__kverify_gv__return_val_ptr(void);
extern "C" __device__ int __kverify_gv__old_int(int value);
extern "C" __device__ int __kverify_gv__old_bool(int value);
extern "C" __device__ int __kverify_gv__atomic_has_taken_value(const volatile void *p, unsigned offset,
                                                               unsigned value);

/* ---- checked: assertions (an overload beside glibc's __assert(const char *, const char *, int)) */
__device__ __forceinline__ void __assert(bool holds) { __kverify_assert(holds); }
__device__ __forceinline__ void __global_assert(bool holds) { __kverify_assert(holds); }

/* ---- preconditions */
__device__ __forceinline__ void __requires(bool holds) { __kverify_requires(holds); }
__device__ __forceinline__ void __global_requires(bool holds) { __kverify_requires(holds); }
#define __assume(e) __kverify_assume((e) ? 1 : 0)

/* ---- evaluated */
__device__ __forceinline__ bool __implies(bool a, bool b) { return !a || b; }
__device__ __forceinline__ bool __enabled(void) { return true; }
#define __ite(b, x, y) ((b) ? (x) : (y))
#define __is_pow2(x) ((((x) & ((x) - 1)) == 0))
#define __mod_pow2(x, y) (((y) - 1) & (x))

/* ---- not evaluated: two-thread predicates (the value in "the other thread") */
#define __other_int(x) __kverify_gv__other_int((int)(x))
#define __other_bool(x) __kverify_gv__other_bool((x) ? 1 : 0)
#define __other_ptr_base(p) __kverify_gv__other_ptr_base(p)
#define __uniform_int(x) ((x) == __other_int(x))
#define __uniform_bool(x) ((x) == __other_bool(x))
#define __uniform_ptr_base(p) (__ptr_base(p) == __other_ptr_base(p))
#define __distinct_int(x) ((x) != __other_int(x))
#define __distinct_bool(x) ((x) != __other_bool(x))
#define __distinct_ptr_base(p) (__ptr_base(p) != __other_ptr_base(p))
#define __all(x) ((x) & __other_bool(x))
#define __exclusive(x) (!(__all(x)))
#define __same_group (blockIdx.x == __other_int(blockIdx.x) & blockIdx.y == __other_int(blockIdx.y) & \
                      blockIdx.z == __other_int(blockIdx.z))

/* ---- not evaluated: access sets, pointer bases, return and old values */
#define __read(p) __kverify_gv__read(p)
#define __write(p) __kverify_gv__write(p)
#define __no_read(p) (!__read(p))
#define __no_write(p) (!__write(p))
#define __read_implies(p, e) __implies(__read(p), (e))
#define __write_implies(p, e) __implies(__write(p), (e))
#define __read_offset_bytes(p) __kverify_gv__read_offset_bytes(p)
#define __write_offset_bytes(p) __kverify_gv__write_offset_bytes(p)
#define __read_offset(p) __read_offset_bytes(p)
#define __write_offset(p) __write_offset_bytes(p)
#define __ptr_offset_bytes(p) __kverify_gv__ptr_offset_bytes(p)
#define __ptr_offset(p) __ptr_offset_bytes(p)
#define __ptr_base(p) __kverify_gv__ptr_base(p)
#define __not_accessed(p) __kverify_gv__not_accessed(p)
#define __accessed(p, e) (__not_accessed(p) != (e))
#define __return_val_int() __kverify_gv__return_val_int()
#define __return_val_bool() __kverify_gv__return_val_bool()
#define __return_val_ptr() __kverify_gv__return_val_ptr()
#define __return_val_funptr(T) ((T)__kverify_gv__return_val_ptr())
#define __old_int(x) __kverify_gv__old_int((int)(x))
#define __old_bool(x) __kverify_gv__old_bool((x) ? 1 : 0)
#define __atomic_has_taken_value(p, offset, value) __kverify_gv__atomic_has_taken_value((p), (offset), (value))

/* ---- proof hints: accepted, not evaluated, listed as not checked */
#define __invariant(e) ((void)0)
#define __global_invariant(e) ((void)0)
#define __candidate_invariant(e) ((void)0)
#define __candidate_global_invariant(e) ((void)0)
#define __function_wide_invariant(e) ((void)0)
#define __function_wide_candidate_invariant(e) ((void)0)
#define __candidate_assert(e) ((void)0)
#define __candidate_global_assert(e) ((void)0)
#define __ensures(e) ((void)0)
#define __global_ensures(e) ((void)0)
#define __reads_from(p) ((void)0)
#define __writes_to(p) ((void)0)
#define __requires_fresh_array(p) ((void)0)
#define __non_temporal_loads_begin() ((void)0)
#define __non_temporal_loads_end() ((void)0)
#define __axiom(e) static_assert(true, "GPUVerify __axiom: not evaluated by kverify")

#endif

// An mbarrier arrive inside functions called through a pointer: lane 0 of each of the 4 warps
// signals the barrier (init count 4) with the function a kernel parameter picks, then every
// thread waits for phase 0 and reads the slot another warp wrote. arrive_once is the handshake;
// arrive_twice arrives twice per warp (8 arrivals on a barrier that expects 4 per phase).
// Compiled with nvcc 13: nvcc -arch=sm_90a -lineinfo -ptx signal.cu (tests/test_brx.py).
#include <cstdint>

typedef void (*signal_fn)(uint64_t*);

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __noinline__ void arrive_once(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
}

__device__ __noinline__ void arrive_twice(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) signal(const float* in, float* out, int which) {
  __shared__ float slot[128];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&bar)), "r"(4) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  slot[threadIdx.x] = in[threadIdx.x];
  __syncwarp();
  signal_fn f = which ? arrive_twice : arrive_once;
  if (threadIdx.x % 32 == 0) {
    f(&bar);
  }
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT;\n\t"
      "}" ::"r"(smem_u32(&bar)),
      "r"(0)
      : "memory");
  out[threadIdx.x] = slot[(threadIdx.x + 32) % 128];
}

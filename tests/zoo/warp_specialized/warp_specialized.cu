// warp_specialized: producer / consumer warpgroups with register reallocation
// (setmaxnreg) and an mbarrier full/empty handshake over a loop, sm_90a.
//
// One CTA of 256 threads = 2 warpgroups.
//   * Warpgroup 0 (threads 0-127) is the producer: setmaxnreg.dec to 40
//     registers, then for each of `iters` steps thread t writes
//     stage[s][t] = in[128*it + t] (generic st.shared) and arrives on full[s].
//   * Warpgroup 1 (threads 128-255) is the consumer: setmaxnreg.inc to 232,
//     then for each step thread t waits full[s], reads stage[s][127 - t]
//     (written by another thread), writes out[128*it + t] = 3 * x + 1 and
//     arrives on empty[s].
// STAGES = 2, s = it % STAGES, round = it / STAGES. full[s] and empty[s] are
// initialized with count 128 (every thread of the other warpgroup arrives,
// with the default .release.cta semantics). Consumers wait full[s] with parity
// round & 1, producers wait empty[s] with parity (round & 1) ^ 1 (a fresh
// barrier satisfies parity 1). All shared-memory accesses are generic-proxy.
//
// __launch_bounds__(256, 1): ptxas (13.0) then gives the kernel 232 registers
// per thread at launch (256 * 232 <= 65536), so the producer's dec releases
// registers and the consumer's inc never needs more than the CTA holds.
#include <cstdint>

#define STAGES 2
#define WG_THREADS 128
#define NUM_THREADS 256

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ uint64_t mbar_arrive(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
  return state;
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void setmaxnreg_dec_40() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
}

__device__ __forceinline__ void setmaxnreg_inc_232() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
    warp_specialized(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ __align__(16) float stage[STAGES][WG_THREADS];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ __align__(8) uint64_t empty[STAGES];

  const uint32_t wg = threadIdx.x / WG_THREADS;
  const uint32_t t = threadIdx.x % WG_THREADS;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], WG_THREADS);
      mbar_init(&empty[s], WG_THREADS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec_40();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
      stage[s][t] = in[(size_t)it * WG_THREADS + t];
      mbar_arrive(&full[s]);
    }
  } else {
    setmaxnreg_inc_232();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(&full[s], (it / STAGES) & 1);
      const float x = stage[s][WG_THREADS - 1 - t];
      out[(size_t)it * WG_THREADS + t] = 3.0f * x + 1.0f;
      mbar_arrive(&empty[s]);
    }
  }
}

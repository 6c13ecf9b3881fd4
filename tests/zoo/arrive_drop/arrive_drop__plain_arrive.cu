// Seeded-bug variant of arrive_drop.cu: plain_arrive (expected finding: deadlock).
// Warps 1-3 use a plain mbarrier.arrive on their last round instead of arrive_drop:
// the expected count stays 4, later phases receive fewer arrivals and never complete,
// so the warps still waiting hang.
// The faulty (or, for a missing statement, the now-unordered) line is marked "<-- BUG".
// arrive_drop: warps leave a per-round mbarrier handshake early with
// mbarrier.arrive_drop, so later phases expect fewer arrivals, sm_90a.
//
// One CTA of 4 warps (128 threads), one mbarrier `bar` (init count 4, one
// arrival per warp from lane 0). Warp w takes part in rounds
// 0 .. rounds(w) - 1 with rounds(0) = iters and rounds(w) = max(iters - w, 1)
// for w = 1..3. In round r an active warp
//   1. writes slot[r & 1][32w + lane] = in[128r + 32w + lane] (generic st.shared),
//   2. __syncwarp(), then lane 0 arrives on bar (phase r),
//   3. unless this is its last round: waits phase r (parity r & 1) and reads the
//      slot of its partner warp p = (w + 1) % 4 if p is active in round r
//      (else its own slot), writing the value to out[128r + 32w + lane];
//      on its last round it writes its own value and does not wait.
// Warps 1-3 use arrive_drop instead of arrive on their last round: the arrival
// counts for phase r and the expected count of every later phase drops by one,
// so phase r has exactly as many expected arrivals as active warps. Warp 0 is
// active in every round and never drops (the expected count never reaches 0).
// Rounds after a warp's last one are filled with 0 in out.
//
// slot is double-buffered: slot[r & 1] is rewritten in round r + 2 only by
// warps that waited phase r + 1, which needs the arrival (after __syncwarp)
// of every warp that read it in round r.
#include <cstdint>

#define NUM_WARPS 4
#define NUM_THREADS (NUM_WARPS * 32)

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

__device__ __forceinline__ uint64_t mbar_arrive_drop(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_u32(bar)) : "memory");
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

__device__ __forceinline__ int rounds_of(int warp, int iters) {
  if (warp == 0) return iters;
  return iters - warp > 1 ? iters - warp : 1;
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    arrive_drop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  __shared__ __align__(16) float slot[2][NUM_THREADS];
  __shared__ __align__(8) uint64_t bar;

  if (iters <= 0) return;  // uniform over the CTA

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    mbar_init(&bar, NUM_WARPS);
    fence_mbarrier_init();
  }
  __syncthreads();

  const int my_rounds = rounds_of(warp, iters);
  const int partner = (warp + 1) % NUM_WARPS;
  const int partner_rounds = rounds_of(partner, iters);

#pragma unroll 1
  for (int r = 0; r < my_rounds; ++r) {
    const bool last = (warp != 0) && (r == my_rounds - 1);
    const float v = in[(size_t)r * NUM_THREADS + threadIdx.x];
    slot[r & 1][threadIdx.x] = v;
    __syncwarp();
    if (lane == 0) {
      if (last) {
        mbar_arrive(&bar);  // <-- BUG: should be arrive_drop (warp leaves)
      } else {
        mbar_arrive(&bar);
      }
    }
    float result = v;
    if (!last) {
      mbar_wait(&bar, r & 1);
      const int src = r < partner_rounds ? partner : warp;
      result = slot[r & 1][src * 32 + lane];
    }
    out[(size_t)r * NUM_THREADS + threadIdx.x] = result;
  }
#pragma unroll 1
  for (int r = my_rounds; r < iters; ++r) {
    out[(size_t)r * NUM_THREADS + threadIdx.x] = 0.0f;
  }
}

// Two rings of mbarriers in one loop, as the CuTe TMA/wgmma tutorial's single issuing thread keeps
// them: `full` advanced every iteration, `empty` only in the iterations that refill (a condition
// on loaded data, so its index has no closed form in the iteration). The symbolic loop summary
// bounds each ring index by the value its wrap compares with (`idx < 3`), which tells the two
// rings' barriers apart (tests/test_ring_bounds.py). A static-analysis input: nothing arrives.
#include <cstdint>

__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tW_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra W_%=;\n\t}" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar))), "r"(parity)
      : "memory");
}

extern "C" __global__ void two_rings(const int* refill, int n) {
  __shared__ uint64_t full[3], empty[3];
  if (threadIdx.x == 0) {
    for (int i = 0; i < 3; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(&full[i]))));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(&empty[i]))));
    }
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  int r = 0, w = 0;
  uint32_t rp = 0, wp = 0;
#pragma unroll 1
  for (int k = 0; k < n; ++k) {
    wait(&full[r], rp);
    if (++r == 3) { r = 0; rp ^= 1; }
    if (refill[k]) {
      wait(&empty[w], wp);
      if (++w == 3) { w = 0; wp ^= 1; }
    }
  }
}

// escaping: the read index steps by 2 and is reset only when it equals 3, so from 0 it runs
// 0, 2, 4, 6, ... past its ring (a bug): no bound may be proved for it, and its waits may name the
// other ring's barriers.
extern "C" __global__ void escaping(const int* refill, int n) {
  __shared__ uint64_t full[3], empty[3];
  if (threadIdx.x != 0) return;
  int r = 0, w = 0;
  uint32_t rp = 0, wp = 0;
#pragma unroll 1
  for (int k = 0; k < n; ++k) {
    wait(&full[r], rp);
    r += 2;
    if (r == 3) { r = 0; rp ^= 1; }
    if (refill[k]) {
      wait(&empty[w], wp);
      if (++w == 3) { w = 0; wp ^= 1; }
    }
  }
}

// guessed: a single thread is producer and consumer (CUTLASS's non-warp-specialized TMA mainloop):
// a pass-through wait on empty[0] (parity 1: a fresh barrier counts its phase -1 as complete),
// then expect-tx on full[s] with s stepping modulo a runtime stage count. No bound holds for s, so
// full[s] may be the word after full[2], empty[0]: the wait could be a consumer of that fill --
// only for ring positions the encoding over-approximates. The static checker must not call the
// pass-through a parity violation on that guess.
extern "C" __global__ void guessed(int n, int stages) {
  __shared__ uint64_t full[3], empty[3];
  if (threadIdx.x != 0) return;
  wait(&empty[0], 1);
  int s = 0;
#pragma unroll 1
  for (int k = 0; k < n; ++k) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 4;" ::"r"(
        static_cast<uint32_t>(__cvta_generic_to_shared(&full[s]))) : "memory");
    s = (s + 1) % stages;
  }
}

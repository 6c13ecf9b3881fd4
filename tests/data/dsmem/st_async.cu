// st.async / red.async in a cluster of two CTAs (__cluster_dims__(2, 1, 1)), sm_90a, the idiom of a
// distributed-shared-memory exchange: each CTA initializes its mbarrier (64 arrivals: thread 0 with
// expect-tx of the 256 bytes it will receive), a cluster barrier makes the barriers visible, every
// thread arrives on its own CTA's barrier and stores its value into the peer's `inbox` with
// st.async, completing on the peer's barrier; each CTA waits for its phase and reads its inbox.
//
// send: as above. Twins: send__no_expect_tx (thread 0 arrives without expect-tx: the phase
//   completes on the arrivals alone), send__short_tx (expects 128 of the 256 bytes), send__no_wait
//   (reads the inbox without waiting), send__no_cluster_sync (the peer's barrier may not be
//   initialized, nor the peer started).
// accumulate: red.async.add.u32 of each thread's value into the peer's `acc` (its own word), which the
//   peer set before the cluster barrier.
#include <cstdint>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t cta) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(cta));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void wait_phase0(uint64_t* bar) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tW_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;\n\t"
      "@!p bra W_%=;\n\t}" ::"r"(smem_u32(bar))
      : "memory");
}

enum Bug { NONE, NO_EXPECT_TX, SHORT_TX, NO_WAIT, NO_CLUSTER_SYNC };

template <Bug BUG>
__device__ __forceinline__ void send_body(int* out) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ __align__(8) int inbox[64];
  const uint32_t t = threadIdx.x, r = rank();
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (BUG == NO_CLUSTER_SYNC)
    __syncthreads();
  else
    cluster_sync();
  if (t == 0 && BUG != NO_EXPECT_TX)
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bar)),
                 "n"(BUG == SHORT_TX ? 128 : 256) : "memory");
  else
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
               ::"r"(mapa(smem_u32(&inbox[t]), r ^ 1)), "r"((int)(r * 1000 + t)), "r"(mapa(smem_u32(&bar), r ^ 1))
               : "memory");
  if (BUG != NO_WAIT) wait_phase0(&bar);
  out[blockIdx.x * 64 + t] = inbox[63 - t];
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) send(int* out) { send_body<NONE>(out); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) send__no_expect_tx(int* out) { send_body<NO_EXPECT_TX>(out); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) send__short_tx(int* out) { send_body<SHORT_TX>(out); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) send__no_wait(int* out) { send_body<NO_WAIT>(out); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) send__no_cluster_sync(int* out) {
  send_body<NO_CLUSTER_SYNC>(out);
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) accumulate(int* out) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ __align__(8) uint32_t acc[64];
  const uint32_t t = threadIdx.x, r = rank();
  acc[t] = 100 * r;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_sync();
  if (t == 0)
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], 256;" ::"r"(smem_u32(&bar)) : "memory");
  else
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
  asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], %1, [%2];"
               ::"r"(mapa(smem_u32(&acc[t]), r ^ 1)), "r"(t + 1), "r"(mapa(smem_u32(&bar), r ^ 1))
               : "memory");
  wait_phase0(&bar);
  out[blockIdx.x * 64 + t] = (int)acc[t];
}

// accumulate__same_word: every thread adds into the peer's acc[0]: 64 asynchronous reductions of one
// word, whose per-element atomicity is not modelled (unknown, not a race).
extern "C" __global__ void __cluster_dims__(2, 1, 1) accumulate__same_word(int* out) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ __align__(8) uint32_t acc[64];
  const uint32_t t = threadIdx.x, r = rank();
  acc[t] = 0;
  if (t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_sync();
  if (t == 0)
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], 256;" ::"r"(smem_u32(&bar)) : "memory");
  else
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&bar)) : "memory");
  asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], %1, [%2];"
               ::"r"(mapa(smem_u32(&acc[0]), r ^ 1)), "r"(t + 1), "r"(mapa(smem_u32(&bar), r ^ 1))
               : "memory");
  wait_phase0(&bar);
  out[blockIdx.x * 64 + t] = (int)acc[t];
}

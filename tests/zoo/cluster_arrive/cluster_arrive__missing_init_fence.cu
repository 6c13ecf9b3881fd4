// Seeded-bug variant of cluster_arrive.cu: missing_init_fence (expected finding: mbarrier.init-visibility).
// No fence.mbarrier_init.release.cluster and no cluster barrier after the mbarrier.init:
// CTA 1 may arrive remotely on CTA 0's barrier (and CTA 0's threads may wait on it)
// before the initialization is visible to them.
// The faulty (or, for a missing statement, the now-unordered) line is marked "<-- BUG".
// cluster_arrive: distributed shared memory + remote mbarrier arrive across a
// cluster of two CTAs, sm_90a.
//
// Grid of one cluster, __cluster_dims__(2, 1, 1), 128 threads per CTA.
//   * Each CTA's thread 0 initializes its mbarrier `bar` with count 128 and
//     executes fence.mbarrier_init.release.cluster; then the whole cluster
//     synchronizes (barrier.cluster.arrive.release / wait.acquire), so the
//     init is visible cluster-wide and both CTAs are running before any
//     remote access.
//   * CTA rank 1: thread t maps CTA 0's buf[t] and bar into the
//     shared::cluster window (mapa), writes buf[t] = 2 * in[t] there with
//     st.shared::cluster, then arrives on CTA 0's bar with
//     mbarrier.arrive.release.cluster.shared::cluster (128 arrivals).
//   * CTA rank 0: every thread waits phase 0 of its local bar with
//     try_wait.parity.acquire.cluster, then reads buf[(t + 1) % 128], which
//     thread t+1 of CTA 1 wrote, and stores it to out[t].
//   * A final cluster barrier keeps CTA 0's shared memory alive until CTA 1
//     is done with it.
#include <cstdint>

#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// shared::cta address of this CTA -> shared::cluster address of the same
// variable in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t mapa_shared(uint32_t local_addr, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local_addr), "r"(rank));
  return remote;
}

__device__ __forceinline__ void st_shared_cluster_f32(uint32_t cluster_addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(cluster_addr), "f"(v) : "memory");
}

__device__ __forceinline__ void mbar_arrive_remote(uint32_t cluster_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
}

__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(NUM_THREADS)
    cluster_arrive(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ __align__(16) float buf[NUM_THREADS];
  __shared__ __align__(8) uint64_t bar;

  const uint32_t tid = threadIdx.x;
  const uint32_t rank = cluster_ctarank();

  if (tid == 0) {
    mbar_init(&bar, NUM_THREADS);  // <-- BUG: init not fenced / cluster-synchronized
  }

  if (rank == 1) {
    const uint32_t remote_buf = mapa_shared(smem_u32(&buf[tid]), 0);
    st_shared_cluster_f32(remote_buf, 2.0f * in[tid]);
    const uint32_t remote_bar = mapa_shared(smem_u32(&bar), 0);
    mbar_arrive_remote(remote_bar);
  } else {
    mbar_wait_cluster(&bar, 0);
    out[tid] = buf[(tid + 1) % NUM_THREADS];
  }

  cluster_arrive_release();
  cluster_wait_acquire();
}

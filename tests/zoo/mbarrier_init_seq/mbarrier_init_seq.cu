// mbarrier_init_seq: the cluster-wide mbarrier init sequence with a relaxed
// cluster barrier, sm_90a.
//
// Grid of one cluster, __cluster_dims__(2, 1, 1), 64 threads (2 warps) per CTA.
//   * thread 0 of each CTA initializes its `full` (count 32) and executes
//     fence.mbarrier_init.release.cluster; then every thread of the cluster
//     executes barrier.cluster.arrive.relaxed + barrier.cluster.wait. The
//     fence is a release restricted to the mbarrier.init (PTX ISA §9.7.12.4);
//     the relaxed arrive that follows it and the acquiring wait complete the
//     synchronization, so the init is visible cluster-wide, while the relaxed
//     arrive orders no other memory access (none is needed here).
//   * warp 0 of CTA r writes stage[t] = (r + 2) * in[32 r + t] into the peer
//     CTA's shared memory (mapa + st.shared::cluster) and arrives on the
//     peer's `full` (mbarrier.arrive.release.cluster.shared::cluster).
//   * warp 1 of CTA r waits phase 0 of its own `full`
//     (try_wait.parity.acquire.cluster) and stores stage[(t + 1) % 32] to
//     out[32 r + t].
//   * a final barrier.cluster.arrive (release) / wait keeps each CTA's shared
//     memory alive until its peer is done with it.
#include <cstdint>

#define LANES 32

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

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

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(2 * LANES)
    mbarrier_init_seq(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ __align__(16) float stage[LANES];
  __shared__ __align__(8) uint64_t full;

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid % LANES;
  const uint32_t rank = cluster_ctarank();
  const uint32_t peer = rank ^ 1;

  if (tid == 0) {
    mbar_init(&full, LANES);
    fence_mbarrier_init();
  }
  cluster_arrive_relaxed();
  cluster_wait();

  if (tid < LANES) {
    st_shared_cluster_f32(mapa_shared(smem_u32(&stage[lane]), peer), (rank + 2.0f) * in[rank * LANES + lane]);
    mbar_arrive_remote(mapa_shared(smem_u32(&full), peer));
  } else {
    mbar_wait_cluster(&full, 0);
    out[rank * LANES + lane] = stage[(lane + 1) % LANES];
  }

  cluster_arrive();
  cluster_wait();
}

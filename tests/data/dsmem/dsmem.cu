// Distributed shared memory lifetime in a cluster of two CTAs (__cluster_dims__(2, 1, 1)), sm_90a.
// A CTA may access another CTA's shared memory only while that CTA runs: after something shows it
// started (a cluster barrier both passed) and before its exit (its exit ordered after the access:
// a release cluster barrier after the access, or an mbarrier wait the access's arrive completes).
//
// exchange: cluster barrier; each CTA writes its rank into the other's buf; cluster barrier; each
//   reads its own buf. Twins: no first barrier (dsmem.before-start); the write to the peer after
//   the last barrier (dsmem.after-exit); the read of the peer after the last barrier (same).
// tail: CTA 1's threads arrive remotely on CTA 0's mbarrier (CUTLASS's consumer release); CTA 0
//   waits for the phase before it exits (the producer tail). Twin: no wait (dsmem.after-exit).
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
__device__ __forceinline__ void st_remote(uint32_t addr, int v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_remote(uint32_t addr) {
  int v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange(int* out) {
  __shared__ int buf[64];
  const uint32_t t = threadIdx.x, r = rank();
  cluster_sync();
  st_remote(mapa(smem_u32(&buf[t]), r ^ 1), (int)(r * 1000 + t));
  cluster_sync();
  out[blockIdx.x * 64 + t] = buf[t];
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange__no_start_sync(int* out) {
  __shared__ int buf[64];
  const uint32_t t = threadIdx.x, r = rank();
  st_remote(mapa(smem_u32(&buf[t]), r ^ 1), (int)(r * 1000 + t));  // <-- BUG: the peer may not have started
  cluster_sync();
  out[blockIdx.x * 64 + t] = buf[t];
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange__late_write(int* out) {
  __shared__ int buf[64];
  const uint32_t t = threadIdx.x, r = rank();
  cluster_sync();
  out[blockIdx.x * 64 + t] = (int)t;
  st_remote(mapa(smem_u32(&buf[t]), r ^ 1), (int)(r * 1000 + t));  // <-- BUG: the peer may have exited
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) exchange__late_read(int* out) {
  __shared__ int buf[64];
  const uint32_t t = threadIdx.x, r = rank();
  cluster_sync();
  buf[t] = (int)(r * 1000 + t);
  cluster_sync();
  out[blockIdx.x * 64 + t] = ld_remote(mapa(smem_u32(&buf[t]), r ^ 1));  // <-- BUG: the peer may have exited
}

template <bool WAIT>
__device__ __forceinline__ void tail_body(int* out) {
  __shared__ __align__(8) uint64_t bar;
  const uint32_t t = threadIdx.x, r = rank(), base = blockIdx.x / 2 * 128;
  if (r == 0 && t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&bar)), "r"(64) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  if (r == 1) {
    out[base + 64 + t] = (int)t;
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(mapa(smem_u32(&bar), 0))
                 : "memory");
  } else if (WAIT) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tW_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;\n\t"
        "@!p bra W_%=;\n\t}" ::"r"(smem_u32(&bar))
        : "memory");
    out[base + t] = out[base + 64 + t];
  }
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) tail(int* out) { tail_body<true>(out); }

extern "C" __global__ void __cluster_dims__(2, 1, 1) tail__no_wait(int* out) { tail_body<false>(out); }

// push: CTA 1 copies its buf into CTA 0's with cp.async.bulk.shared::cluster.shared::cta, completed
// on CTA 0's mbarrier, which CTA 0 waits on before reading. Twin: CTA 0 does not wait
// (dsmem.after-exit: the copy into its shared memory may complete after it exits).
template <bool WAIT>
__device__ __forceinline__ void push_body(int* out) {
  __shared__ __align__(16) int buf[64];
  __shared__ __align__(8) uint64_t bar;
  const uint32_t t = threadIdx.x, r = rank(), base = blockIdx.x / 2 * 64;
  if (r == 0 && t == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 256;" ::"r"(smem_u32(&bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (r == 1) buf[t] = (int)(1000 + t);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  cluster_sync();
  if (r == 1 && t == 0)
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];"
                 ::"r"(mapa(smem_u32(buf), 0)), "r"(smem_u32(buf)), "r"(mapa(smem_u32(&bar), 0)) : "memory");
  if (r == 0 && WAIT) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tW_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t"
        "@!p bra W_%=;\n\t}" ::"r"(smem_u32(&bar))
        : "memory");
    out[base + t] = buf[t];
  }
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) push(int* out) { push_body<true>(out); }

extern "C" __global__ void __cluster_dims__(2, 1, 1) push__no_wait(int* out) { push_body<false>(out); }

// Warp 0 completes an mbarrier phase; warp 1 probes it once with a non-blocking test_wait and
// picks an index by the result. The seeded bug: the index when the probe succeeds overruns `out`,
// which only a schedule that runs warp 0's arrive before warp 1's probe reaches.
#include <cstdint>

extern "C" __global__ void probe_order(unsigned int* out) {
  __shared__ uint64_t bar;
  unsigned int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (warp == 0 && lane == 0) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
  }
  if (warp == 1 && lane == 0) {
    uint32_t done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                 " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(b) : "memory");
    out[done ? 4 : 0] = 1;
  }
}

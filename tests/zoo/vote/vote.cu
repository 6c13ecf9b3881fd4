// Warp vote functions. Each thread tests in[i] > 0 (false past n); per warp
// (global warp index w) the elected leader lane writes:
//   ballots[w]  = __ballot_sync mask of the predicate
//   all_out[w]  = __all_sync,  any_out[w] = __any_sync
//   popc_out[w] = __popc(ballot)
//   leaders[w] += 1 (exactly one lane is elected by elect.sync, so 1)
// The leader is chosen with elect.sync from inline PTX (sm_90).
#define BLOCK 128
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(BLOCK)
vote(const int* in, unsigned* ballots, int* all_out, int* any_out, int* popc_out,
     int* leaders, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  int w = i / 32;
  bool pred = (i < n) && (in[i] > 0);
  unsigned ballot = __ballot_sync(FULL_MASK, pred);
  int all = __all_sync(FULL_MASK, pred);
  int any = __any_sync(FULL_MASK, pred);
  int popc = __popc(ballot);
  unsigned leader_lane;
  unsigned is_leader;
  asm volatile(
      "{\n"
      "  .reg .pred elected;\n"
      "  elect.sync %0|elected, 0xffffffff;\n"
      "  selp.u32 %1, 1, 0, elected;\n"
      "}\n"
      : "=r"(leader_lane), "=r"(is_leader));
  unsigned lane = threadIdx.x & 31u;
  if (is_leader && leader_lane == lane) {  // elect.sync reports the leader's own lane id
    ballots[w] = ballot;
    all_out[w] = all;
    any_out[w] = any;
    popc_out[w] = popc;
    atomicAdd(&leaders[w], 1);
  }
}

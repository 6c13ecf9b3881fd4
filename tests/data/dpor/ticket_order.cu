// Three warps take one ticket each and record who took which; thread 0 then reads the record.
// The seeded bug: an index that overruns `out` when the tickets went in the reverse order of
// the warps (warp 2 first, then warp 1, then warp 0): two preemptions from the schedule that
// runs warps in index order.
#define WARPS 3

__device__ unsigned int next_ticket = 0;

extern "C" __global__ void ticket_order(unsigned int* out) {
  __shared__ unsigned int taken_by[WARPS];
  unsigned int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    unsigned int t = atomicAdd(&next_ticket, 1u);
    taken_by[t] = warp;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int reversed = taken_by[0] == 2 && taken_by[1] == 1 && taken_by[2] == 0;
    out[WARPS * reversed + taken_by[0]] = taken_by[2];
  }
}

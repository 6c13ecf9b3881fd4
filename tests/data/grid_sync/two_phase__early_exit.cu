// two_phase__early_exit (seeded bug): cooperative groups' grid-wide barrier. Every thread writes tmp[i], the whole grid
// synchronizes with grid.sync() (a cooperative launch: cudaLaunchCooperativeKernel), then every
// thread reads its neighbour's tmp, written by another CTA for the last thread of each CTA.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void two_phase(const float* __restrict__ in, float* tmp, float* out, int n) {
  cg::grid_group g = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = in[i] * 2.0f;
  if (blockIdx.x == gridDim.x - 1) return;  // seeded: the last CTA never arrives at the grid barrier
  g.sync();
  if (i < n) out[i] = tmp[(i + 1) % n] + tmp[i];
}

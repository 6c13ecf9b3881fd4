// Per-CTA partial results: thread 0 of each CTA writes its slot.
// Seeded race: the slot index wraps at 3, so a fourth CTA writes the first CTA's slot.
#define BLOCK 64

extern "C" __global__ void __launch_bounds__(BLOCK)
grid_slots(const float* in, float* slots) {
  if (threadIdx.x == 0) {
    slots[blockIdx.x % 3] = in[blockIdx.x * BLOCK] + in[blockIdx.x * BLOCK + BLOCK - 1];  // BUG: % 3
  }
}

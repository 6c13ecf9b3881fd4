// When the order of atomics matters. A run stands for every order of the atomics on a location
// only where they commute and no returned value is read, or where happens-before orders them.
//
// shared_slot: lane 0 of each of four warps adds its value to one shared f32 (float adds do not
//   commute bit for bit, nothing orders the warps): schedule-dependent.
// one_instruction: the 32 lanes of one warp add to 16 shared f32 slots, two lanes a slot, in one
//   instruction (the ISA leaves the lanes' order open): schedule-dependent.
// ticket_then_add: warp 0 takes a ticket (its returned value is stored), warp 1 adds to the same
//   counter without reading the result: the ticket's value depends on which comes first.
// two_lanes: lanes 0 and 1 of one warp add to one shared f32 in two branches (lanes of a warp are
//   ordered only at warp-synchronizing points): schedule-dependent.
// ordered: warp 0 adds, __syncthreads(), warp 1 adds to the same f32: one order in every schedule.
// own_slot: every thread adds to a slot of its own: one outcome in every schedule.

extern "C" __global__ void shared_slot(const float* x, float* out) {
  __shared__ float s;
  if (threadIdx.x == 0) s = 1.0f;
  __syncthreads();
  if (threadIdx.x % 32 == 0) atomicAdd(&s, x[threadIdx.x / 32]);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s;
}

extern "C" __global__ void one_instruction(const float* x, float* out) {
  __shared__ float s[16];
  if (threadIdx.x < 16) s[threadIdx.x] = 1.0f;
  __syncthreads();
  if (threadIdx.x < 32) atomicAdd(&s[threadIdx.x / 2], x[threadIdx.x]);
  __syncthreads();
  if (threadIdx.x < 16) out[threadIdx.x] = s[threadIdx.x];
}

extern "C" __global__ void ticket_then_add(const float* x, float* out) {
  __shared__ unsigned counter;
  if (threadIdx.x == 0) counter = 0;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = (float)atomicAdd(&counter, 1u);
  if (threadIdx.x == 32) atomicAdd(&counter, 2u);
  __syncthreads();
  if (threadIdx.x == 0) out[1] = (float)counter;
}

extern "C" __global__ void ordered(const float* x, float* out) {
  __shared__ float s;
  if (threadIdx.x == 0) s = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&s, x[0]);
  __syncthreads();
  if (threadIdx.x == 32) atomicAdd(&s, x[1]);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s;
}

extern "C" __global__ void own_slot(const float* x, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = 1.0f;
  __syncthreads();
  atomicAdd(&s[threadIdx.x], x[threadIdx.x]);
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}

extern "C" __global__ void two_lanes(const float* x, float* out) {
  __shared__ float s;
  if (threadIdx.x == 0) s = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&s, x[0]);
  } else if (threadIdx.x == 1) {
    out[1] = x[2];
    atomicAdd(&s, x[1]);
  }
  __syncthreads();
  if (threadIdx.x == 0) out[0] = s;
}

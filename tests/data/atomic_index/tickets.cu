// The value an atomicAdd returns used as an index: `j = atomicAdd(c, k); out[j] = ...`. Our own
// kernels for the race checker's atom.add refinements (kverify/verifier/races/atomics.py).

// a ticket counter: every thread adds 1, nothing else writes *c: each thread gets its own slot
extern "C" __global__ void ticket(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, 1u);
  out[j] = threadIdx.x;
}

// a ticket counter counting down (atomicSub: atom.add of -1)
extern "C" __global__ void ticket_down(unsigned *c, int *out) {
  unsigned j = atomicSub(c, 1u);
  out[j & 1023] = threadIdx.x;
}

// increment 0: every thread reads the same value and writes the same slot
extern "C" __global__ void add_zero(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, 0u);
  out[j] = threadIdx.x;
}

// increment tid: thread 0 adds nothing, so the thread after it gets the same value
extern "C" __global__ void add_tid(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, threadIdx.x);
  out[j] = threadIdx.x;
}

// increment tid + 1: never 0, but not the same for every thread: not a ticket counter
extern "C" __global__ void add_tid_plus_one(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, threadIdx.x + 1);
  out[j] = threadIdx.x;
}

// another write of the counter: thread 0 of each CTA resets it (atomically, so that the reset
// itself races with nothing), and two threads may then get the same value
extern "C" __global__ void ticket_reset(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, 1u);
  if (threadIdx.x == 0) {
    atomicExch(c, 0u);
  }
  out[j] = threadIdx.x;
}

// a write of the counter's buffer that is not the counter (c[1 + CTA]): still a ticket counter
extern "C" __global__ void ticket_neighbour(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, 1u);
  if (threadIdx.x == 0) {
    c[1 + blockIdx.x] = 7;
  }
  out[j] = threadIdx.x;
}

// atomicExch and atomicCAS return what another thread stored: not ticket counters
extern "C" __global__ void exch_index(unsigned *c, int *out) {
  unsigned j = atomicExch(c, threadIdx.x);
  out[j] = threadIdx.x;
}

extern "C" __global__ void cas_index(unsigned *c, int *out) {
  unsigned j = atomicCAS(c, 0u, threadIdx.x);
  out[j] = threadIdx.x;
}

// increment 2^31: three executions wrap around to the first value (a ticket counter only for
// launches of at most 2 threads)
extern "C" __global__ void ticket_half(unsigned *c, int *out) {
  unsigned j = atomicAdd(c, 0x80000000u);
  out[j] = threadIdx.x;
}

// a floating-point add is no ticket counter: a subnormal increment flushes to zero (every thread
// gets the same result), and 1.0f steps stop at 2^24
extern "C" __global__ void ticket_float(float *c, int *out) {
  float r = atomicAdd(c, 1.4e-45f);
  out[__float_as_uint(r)] = threadIdx.x;
}

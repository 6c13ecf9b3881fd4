// Registers read before any instruction wrote them (uninitialized.register): each kernel with a
// correct twin (ACC_INIT / the else branch / the right source lane) built from the same source.
#ifndef ACC_INIT
#define ACC_INIT
#endif

// the accumulator is never zeroed: acc's first fma reads a register nothing wrote
extern "C" __global__ void dot_rows(const float* a, const float* b, float* out, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float acc ACC_INIT;
    for (int k = 0; k < n; ++k)
        acc += a[row * n + k] * b[k];
    out[row] = acc;
}

// v is assigned only where i < n; every thread stores it
extern "C" __global__ void pick(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v;
    if (i < n)
        v = a[i];
#ifdef PICK_ELSE
    else
        v = -1;
#endif
    out[i] = v;
}

// v is assigned only where i < n and only stored there (a select picks the defined value)
extern "C" __global__ void pick_guarded(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v;
    if (i < n)
        v = a[i];
    out[i] = i < n ? v : 0;
}

// lane 0 loads, the warp reads it from lane SRC_LANE (0: the broadcast; 1: a lane that loaded nothing)
#ifndef SRC_LANE
#define SRC_LANE 0
#endif
extern "C" __global__ void broadcast(const int* a, int* out) {
    int lane = threadIdx.x & 31;
    int v;
    if (lane == 0)
        v = a[blockIdx.x];
    v = __shfl_sync(0xffffffffu, v, SRC_LANE);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

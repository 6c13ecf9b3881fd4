// Warp-level tree reduction through shared memory: each warp sums its 32 inputs.
// Seeded bug: no __syncwarp() between the steps, so lane t reads s[t + off] that lane t + off
// wrote one step earlier with nothing ordering the two lanes.
extern "C" __global__ void warp_reduce_smem(const float *in, float *out, int n)
{
    __shared__ float s[256];
    int tid = threadIdx.x, lane = tid & 31;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncwarp();
    for (int off = 16; off > 0; off >>= 1) {
        if (lane < off)
            s[tid] += s[tid + off];
    }
    if (lane == 0)
        out[blockIdx.x * (blockDim.x / 32) + (tid >> 5)] = s[tid];
}

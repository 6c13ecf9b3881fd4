// SAXPY with 16-byte vector accesses: each thread handles one float4.
// Assumes n is a multiple of 4 and x, y are 16-byte aligned.
// Seeded functional bug: the fourth lane of the float4 misses the alpha factor.
#define BLOCK 128

extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy_vec(int n, float alpha, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4) {
    float4 xv = reinterpret_cast<const float4*>(x)[i];
    float4 yv = reinterpret_cast<float4*>(y)[i];
    yv.x = alpha * xv.x + yv.x;
    yv.y = alpha * xv.y + yv.y;
    yv.z = alpha * xv.z + yv.z;
    yv.w = xv.w + yv.w;  // BUG: alpha * xv.w
    reinterpret_cast<float4*>(y)[i] = yv;
  }
}

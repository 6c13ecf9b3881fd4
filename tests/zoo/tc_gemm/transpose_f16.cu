// Naive transpose of a rows x cols f16 matrix: out[c][r] = in[r][c], one thread per element
// (the reference of the ldmatrix/stmatrix form).
#include <cuda_fp16.h>

extern "C" __global__ void transpose_f16(const __half* in, __half* out, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        int r = i / cols, c = i % cols;
        out[c * rows + r] = in[i];
    }
}

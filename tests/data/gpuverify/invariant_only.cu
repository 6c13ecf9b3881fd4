//pass
//--blockDim=64 --gridDim=4

// Loop invariants only: the strided copy needs none of them to be race free.

__global__ void strided_copy(const float *src, float *dst) {
  for (unsigned i = 0;
       __invariant(i <= 4),
       __global_invariant(__write_implies(dst, __write_offset_bytes(dst) / sizeof(float) % 64 == threadIdx.x)),
       i < 4; i++) {
    unsigned k = (blockIdx.x * 4 + i) * 64 + threadIdx.x;
    dst[k] = src[k];
  }
}

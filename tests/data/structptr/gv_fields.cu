//pass
//--blockDim=64 --gridDim=2

// A GPUVerify-style test: the pointers are fields of a struct nested in the parameter's struct.

struct S {
  struct {
    int *p;
    int *q;
  } s;
};

__global__ void copy_fields(struct S A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  A.s.q[i] = A.s.p[i] + threadIdx.x;
}

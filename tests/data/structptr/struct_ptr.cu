// Pointers inside by-value struct parameters that no launch gives bytes for: kverify finds the
// 8-byte slots the kernel uses as global addresses and gives each a buffer of its own (A.p, ...),
// sized from the kernel's accesses like a pointer parameter's buffer.
struct Out { int *p; };
struct Pair { const int *in; int *out; };
struct Counted { int n; int *p; };  // a scalar field beside the pointer

extern "C" __global__ void fill(Out A) {
  A.p[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x;
}

extern "C" __global__ void fill_race(Out A) {
  A.p[0] = threadIdx.x;  // every thread writes element 0
}

extern "C" __global__ void add_one(Pair A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  A.out[i] = A.in[i] + 1;
}

extern "C" __global__ void first_n(Counted A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < A.n) A.p[i] = i;
}

// the struct passed by value to a device function
__device__ __noinline__ void store_at(Out o, int i) { o.p[i] = i; }

extern "C" __global__ void through_call(Out A) {
  store_at(A, blockIdx.x * blockDim.x + threadIdx.x);
}

// the struct's address taken: nvcc keeps a copy of it in the thread's local memory, which the
// device function changes through the pointer
__device__ __noinline__ void advance(Out *o, int n) { o->p += n; }

extern "C" __global__ void local_copy(Out A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  advance(&A, 2 * i);
  A.p[0] = i;
  A.p[1] = i;
}

extern "C" __global__ void local_copy_race(Out A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  advance(&A, i);  // thread i writes elements i and i + 1: thread i + 1 writes i + 1 too
  A.p[0] = i;
  A.p[1] = i;
}

// a 64-bit field used as a value, not as an address: it stays a scalar
struct Tagged { long tag; int *p; };

extern "C" __global__ void tagged(Tagged A) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  A.p[i] = (int)(A.tag / (i + 1));
}

// Pairs whose outputs agree in the order the walk runs the atomics, not in every order.
// Candidate: CTA 0 does atomicAdd(out[0], 1), CTA 1 does atomicMax(out[0], 5).
// Nothing orders the two CTAs, so the final out[0] is either max(c+1,5) or max(c,5)+1.
extern "C" __global__ void cand(const int* a, int* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&out[0], 1);
  if (threadIdx.x == 0 && blockIdx.x == 1) atomicMax(&out[0], 5);
}
// Reference: one fixed order, add first then max.
extern "C" __global__ void ref(const int* a, int* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { int v = out[0] + 1; out[0] = v > 5 ? v : 5; }
}
// Reference with the other order.
extern "C" __global__ void ref_other(const int* a, int* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { int v = out[0]; v = v > 5 ? v : 5; out[0] = v + 1; }
}
// and/or variant: CTA 0 does atomicAnd(out[0], a[0]), CTA 1 does atomicOr(out[0], a[1])
extern "C" __global__ void cand_andor(const int* a, int* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAnd(&out[0], a[0]);
  if (threadIdx.x == 0 && blockIdx.x == 1) atomicOr(&out[0], a[1]);
}
extern "C" __global__ void ref_andor(const int* a, int* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = (out[0] & a[0]) | a[1];
}

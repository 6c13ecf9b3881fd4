// Integer division by a per-element divisor read from memory: the ISA leaves x / 0 unspecified
// (PTX ISA: div, rem). DIV_GUARD: lanes whose divisor is 0 skip the division (the correct
// kernel). Built by build.sh.
extern "C" __global__ void split(const unsigned *num, const unsigned *den, unsigned *quot, unsigned *rem, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned d = den[i];
#ifdef DIV_GUARD
    if (d == 0) { quot[i] = 0; rem[i] = num[i]; return; }
#endif
    quot[i] = num[i] / d;
    rem[i] = num[i] % d;
}

// Extended-precision arithmetic (the carry flag) and match.sync, as nvcc emits them.
// Each thread adds, subtracts and multiplies 128-bit numbers and groups its warp by key.

typedef unsigned __int128 u128;

__global__ void carry_match(const unsigned long long *a, const unsigned long long *b,
                            const unsigned *key, const unsigned long long *key64,
                            unsigned long long *sum, unsigned long long *diff,
                            unsigned long long *prod, unsigned *words, unsigned *groups)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    u128 x = ((u128)a[2 * i + 1] << 64) | a[2 * i];
    u128 y = ((u128)b[2 * i + 1] << 64) | b[2 * i];
    u128 s = x + y;                                  // add.cc.u64 / addc.u64
    u128 d = x - y;                                  // sub.cc.u64 / subc.u64
    u128 p = (u128)a[2 * i] * b[2 * i];              // mul.lo / mul.hi
    sum[2 * i] = (unsigned long long)s;
    sum[2 * i + 1] = (unsigned long long)(s >> 64);
    diff[2 * i] = (unsigned long long)d;
    diff[2 * i + 1] = (unsigned long long)(d >> 64);
    prod[2 * i] = (unsigned long long)p;
    prod[2 * i + 1] = (unsigned long long)(p >> 64);
    // a 96-bit add and a 64-bit multiply-add in 32-bit words, as multi-precision libraries write them
    unsigned x0 = (unsigned)a[2 * i], x1 = (unsigned)(a[2 * i] >> 32), x2 = (unsigned)a[2 * i + 1];
    unsigned y0 = (unsigned)b[2 * i], y1 = (unsigned)(b[2 * i] >> 32), y2 = (unsigned)b[2 * i + 1];
    unsigned r0, r1, r2, r3, m0, m1;
    asm("add.cc.u32 %0, %4, %7;\n\t"
        "addc.cc.u32 %1, %5, %8;\n\t"
        "addc.cc.u32 %2, %6, %9;\n\t"
        "addc.u32 %3, 0, 0;"
        : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
        : "r"(x0), "r"(x1), "r"(x2), "r"(y0), "r"(y1), "r"(y2));
    asm("mad.lo.cc.u32 %0, %2, %3, %4;\n\t"
        "madc.hi.u32 %1, %2, %3, %5;"
        : "=r"(m0), "=r"(m1) : "r"(x0), "r"(y0), "r"(x1), "r"(y1));
    unsigned b0, b1;
    asm("sub.cc.u32 %0, %2, %3;\n\t"
        "subc.u32 %1, %4, %5;"
        : "=r"(b0), "=r"(b1) : "r"(x0), "r"(y0), "r"(x1), "r"(y1));
    words[8 * i + 0] = r0; words[8 * i + 1] = r1; words[8 * i + 2] = r2; words[8 * i + 3] = r3;
    words[8 * i + 4] = m0; words[8 * i + 5] = m1; words[8 * i + 6] = b0; words[8 * i + 7] = b1;
    // lanes grouped by key: every lane, and the odd lanes alone
    unsigned k = key[i];
    int all_pred;
    groups[4 * i + 0] = __match_any_sync(0xffffffffu, k);
    groups[4 * i + 1] = __match_all_sync(0xffffffffu, key64[i], &all_pred);
    groups[4 * i + 2] = all_pred;
    groups[4 * i + 3] = (threadIdx.x & 1) ? __match_any_sync(0xaaaaaaaau, key64[i]) : 0u;
}

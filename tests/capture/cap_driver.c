/* A driver-API program for the no-GPU capture tests (tests/test_capture_driver.py), plain C with
 * the few driver declarations it uses (no CUDA header, no nvcc): build it with
 *     cc -o cap_driver cap_driver.c -L$(kverify capture --print-libdir) -lcuda
 * and run it as  kverify capture --no-gpu -- ./cap_driver cap_kernels.ptx MODE  (MODE below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUgraph, *CUgraphExec;
CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *, size_t *, CUmodule, const char *);
CUresult cuFuncSetAttribute(CUfunction, int, int);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFreeHost(void *);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemsetD32_v2(CUdeviceptr, unsigned, size_t);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: CUresult %d\n", #x, r_); return 1; } } while (0)

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: cap_driver KERNELS.ptx contents|cluster|memory|graph\n"); return 2; }
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 2; }
  static char ptx[1 << 20];
  ptx[fread(ptx, 1, sizeof ptx - 1, f)] = 0;
  fclose(f);
  const char *mode = argv[2];
  int dev; CUcontext ctx; CUmodule mod; CUfunction fn;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, ptx));
  if (!strcmp(mode, "contents")) {
    /* hist over bytes 0..255 into 128 bins (out of bounds), then use_globals with g_limit = 300 on
     * 256 floats (out of bounds): both only with the contents the host wrote */
    int n = 256;
    unsigned char h[256];
    for (int i = 0; i < n; i++) h[i] = (unsigned char)i;
    CUdeviceptr data, bins, p, g, c;
    size_t gs, cs;
    CK(cuMemAlloc_v2(&data, n)); CK(cuMemAlloc_v2(&bins, 128 * 4));
    CK(cuMemcpyHtoD_v2(data, h, n)); CK(cuMemsetD32_v2(bins, 7, 128));
    CK(cuModuleGetFunction(&fn, mod, "hist"));
    void *a[] = {&data, &bins, &n};
    CK(cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, NULL, a, NULL));
    int lim = 300, off = 0;
    CK(cuModuleGetGlobal_v2(&g, &gs, mod, "g_limit")); CK(cuMemcpyHtoD_v2(g, &lim, sizeof lim));
    CK(cuModuleGetGlobal_v2(&c, &cs, mod, "c_off")); CK(cuMemcpyHtoD_v2(c, &off, sizeof off));
    CK(cuMemAlloc_v2(&p, 256 * 4));
    CK(cuModuleGetFunction(&fn, mod, "use_globals"));
    void *b[] = {&p};
    CK(cuLaunchKernel(fn, 3, 1, 1, 128, 1, 1, 0, NULL, b, NULL));
  } else if (!strcmp(mode, "cluster")) {
    /* a required cluster width of 2 set on the function, launched with cuLaunchKernel; then a
     * launch the driver refuses (2048 threads a block) */
    CUdeviceptr o; int n = 256;
    CK(cuMemAlloc_v2(&o, 4 * 128 * 4));
    CK(cuModuleGetFunction(&fn, mod, "to_rank0"));
    CK(cuFuncSetAttribute(fn, 11 /* CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH */, 2));
    void *a[] = {&o};
    CK(cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, NULL, a, NULL));
    CK(cuModuleGetFunction(&fn, mod, "scale"));
    void *b[] = {&o, &n};
    CUresult r = cuLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, b, NULL);
    printf("refused launch: CUresult %d\n", r);
  } else if (!strcmp(mode, "memory")) {
    /* page-locked host memory, a pitched allocation, stream-ordered and host frees, and a
     * one-past-the-end pointer */
    void *h, *h2; CUdeviceptr q, s, hp, b, e; size_t pitch; int n = 256; CUstream st;
    CK(cuStreamCreate(&st, 0));
    CK(cuMemHostAlloc(&h, 1024, 0)); CK(cuMemAllocPitch_v2(&q, &pitch, 1024, 4, 4));
    CK(cuModuleGetFunction(&fn, mod, "scale"));
    hp = (CUdeviceptr)h;
    void *a[] = {&hp, &n};
    CK(cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, NULL, a, NULL));
    void *a2[] = {&q, &n};
    CK(cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, NULL, a2, NULL));
    CK(cuMemAllocAsync(&s, 4096, st)); CK(cuMemFreeAsync(s, st));
    CK(cuMemAllocHost_v2(&h2, 64)); CK(cuMemFreeHost(h2));
    CK(cuMemAlloc_v2(&b, 256 * 4)); e = b + 256 * 4;
    CK(cuModuleGetFunction(&fn, mod, "range"));
    void *a3[] = {&b, &e};
    CK(cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, NULL, a3, NULL));
  } else if (!strcmp(mode, "graph")) {
    /* a launch made while the stream is captured into a graph, and the graph launched twice */
    CUdeviceptr p; int n = 256; CUstream st; CUgraph g; CUgraphExec ge;
    CK(cuMemAlloc_v2(&p, 256 * 4)); CK(cuStreamCreate(&st, 0));
    CK(cuModuleGetFunction(&fn, mod, "scale"));
    void *a[] = {&p, &n};
    CK(cuStreamBeginCapture_v2(st, 0));
    CK(cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, st, a, NULL));
    CK(cuStreamEndCapture(st, &g));
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuGraphLaunch(ge, st)); CK(cuGraphLaunch(ge, st));
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  CK(cuCtxSynchronize());
  printf("%s done\n", mode);
  return 0;
}

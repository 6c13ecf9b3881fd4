"""A Python program that launches kernels through the CUDA driver API (ctypes, no CUDA Python
package) and records the launches of one block with ``kverify.capture()``. Run it under
``kverify capture [--no-gpu] -- python ctx_driver.py vadd.ptx [N GRID]``: vadd over 1000-float
allocations is launched once before the block (not in ``cap.launches``) and twice inside it, the
second time with n=N on GRID blocks (default 500 on 2; n over 1000 reads past the allocations);
each recorded launch is then checked."""
import ctypes
import sys

import numpy as np

import kverify

cuda = ctypes.CDLL("libcuda.so.1")


def ck(r, what):
    if r != 0:
        sys.exit(f"{what}: CUresult {r}")


ck(cuda.cuInit(0), "cuInit")
dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
ck(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
ck(cuda.cuModuleLoadData(ctypes.byref(mod), open(sys.argv[1], "rb").read() + b"\0"), "cuModuleLoadData")
ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"vadd"), "cuModuleGetFunction")

N = 1000
ptrs = []
for _ in range(3):
    p = ctypes.c_uint64()
    ck(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(N * 4)), "cuMemAlloc_v2")
    ptrs.append(p)
x = np.arange(N, dtype=np.float32)
for p in ptrs[:2]:
    ck(cuda.cuMemcpyHtoD_v2(p, x.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(N * 4)), "cuMemcpyHtoD_v2")


def vadd(n, grid):
    nn = ctypes.c_uint32(n)
    params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in (*ptrs, nn)])
    ck(cuda.cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, None, params, None), "cuLaunchKernel")


vadd(N, 4)                       # before the block: not captured by it
with kverify.capture() as cap:
    vadd(N, 4)
    vadd(*(map(int, sys.argv[2:4]) if len(sys.argv) > 3 else (500, 2)))
print(f"{len(cap.launches)} launch(es) in the block")
for launch in cap.launches:
    print(f"{launch.kernel} grid {launch.grid} block {launch.block}: {launch.check().verdict}")

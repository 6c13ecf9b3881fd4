"""Run the zoo's correct Triton PTX kernels on a real GPU, launched purely from manifest.json
(args, buffers, tensormaps, grid, block, shared_bytes), and compare with ref.py.

Uses only the CUDA driver API through ctypes (libcuda.so) and numpy: no triton, no torch.
Mutated variants are not run by default (some can hang the GPU); pass file names to run
specific ones, e.g. ``python run_on_gpu.py tma_matmul__no_store_fence.ptx``.

Exit status 0 when every kernel run matches its reference.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ref  # noqa: E402

cuda = ctypes.CDLL("libcuda.so.1")
DT = {"float16": (np.float16, 6), "float32": (np.float32, 7)}  # CU_TENSOR_MAP_DATA_TYPE_*
SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


def check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: {rc} {name.value}")


def main(argv):
    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
    check(cuda.cuCtxSetCurrent(ctx), "ctx set")

    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    chosen = [v for v in manifest["variants"] if (v["file"] in argv if argv else v["correct"])]
    rng = np.random.default_rng(0)
    failures = 0
    for v in chosen:
        L = v["launch"]
        ptx = open(os.path.join(HERE, v["file"]), "rb").read() + b"\0"
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(cuda.cuModuleLoadData(ctypes.byref(mod), ptx), f"load {v['file']}")
        check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, L["kernel"].encode()), "getfn")
        smem = int(L.get("shared_bytes", 0))
        check(cuda.cuFuncSetAttribute(fn, 8, smem), "max dyn smem")  # MAX_DYNAMIC_SHARED_SIZE_BYTES

        host, dptr = {}, {}
        for name, b in L["buffers"].items():
            dt = DT[b["dtype"]][0]
            arr = (rng.standard_normal(b["shape"]) * 0.5).astype(dt)
            if name in L["outputs"]:
                arr = np.full(b["shape"], 7, dt)  # sentinel: must be overwritten where computed
            host[name] = arr
            p = ctypes.c_uint64()
            check(cuda.cuMemAlloc_v2(ctypes.byref(p), max(arr.nbytes, 1)), "alloc")
            check(cuda.cuMemcpyHtoD_v2(p, arr.ctypes.data, arr.nbytes), "h2d")
            dptr[name] = p

        tmaps = {}
        for pname, t in L["tensormaps"].items():
            tm = (ctypes.c_uint8 * 128 * 2)()  # over-allocate for 64-byte alignment
            addr = (ctypes.addressof(tm) + 63) // 64 * 64
            rank = len(t["shape"])
            esize = np.dtype(DT[t["dtype"]][0]).itemsize
            gdim = (ctypes.c_uint64 * rank)(*reversed(t["shape"]))
            gstr = (ctypes.c_uint64 * (rank - 1))(*[s * esize for s in reversed(t["strides"][:-1])])
            box = (ctypes.c_uint32 * rank)(*reversed(t["box"]))
            estr = (ctypes.c_uint32 * rank)(*([1] * rank))
            check(cuda.cuTensorMapEncodeTiled(
                ctypes.c_void_p(addr), DT[t["dtype"]][1], rank, ctypes.c_void_p(dptr[t["buffer"]].value),
                gdim, gstr, box, estr, 0, SWIZZLE[t["swizzle"]], 2, 0), f"tensormap {pname}")
            tmaps[pname] = (tm, addr)

        holders, kparams = [], []
        for prm in v["params"]:
            name, ty = prm["name"], prm["type"]
            if name in tmaps:
                kparams.append(ctypes.c_void_p(tmaps[name][1]))
                continue
            if name in dptr:
                val = ctypes.c_uint64(dptr[name].value)
            elif ".u64" in ty:
                val = ctypes.c_uint64(int(L["args"][name]))
            elif ".u32" in ty:
                val = ctypes.c_uint32(int(L["args"][name]) & 0xFFFFFFFF)
            else:
                raise ValueError(f"{v['file']}: param {name} {ty}")
            holders.append(val)
            kparams.append(ctypes.cast(ctypes.pointer(val), ctypes.c_void_p))
        argv_c = (ctypes.c_void_p * len(kparams))(*kparams)
        g, b = L["grid"], L["block"]
        check(cuda.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], smem, None, argv_c, None),
              f"launch {v['file']}")
        check(cuda.cuCtxSynchronize(), f"sync {v['file']}")

        args = {k: val for k, val in L["args"].items()}
        inputs = {k: a for k, a in host.items() if k not in L["outputs"]}
        expected = getattr(ref, v["reference"].split(":")[1])(inputs, args)
        ok = True
        for out in L["outputs"]:
            got = np.empty_like(host[out])
            check(cuda.cuMemcpyDtoH_v2(got.ctypes.data, dptr[out], got.nbytes), "d2h")
            exp = expected[out]
            m = np.isfinite(exp)
            err = float(np.max(np.abs(got.astype(np.float32) - exp.astype(np.float32))))
            tol = 1e-5 if v["file"] == "add.ptx" else 2e-2 * max(1.0, float(np.max(np.abs(exp[m]))))
            ok &= err <= tol
            print(f"{v['file']:42s} {out}: max|err| = {err:.3g} (tol {tol:.3g}) {'OK' if err <= tol else 'MISMATCH'}")
        failures += not ok
        for p in dptr.values():
            cuda.cuMemFree_v2(p)
        cuda.cuModuleUnload(mod)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Running PTX on a GPU through the CUDA driver API (``libcuda`` via ctypes; no torch, no
cuda-python needed).

Owns: finding the driver and the device, loading a module (a cubin assembled by ``ptxas``
with the pinned flags of ``kverify.lowering.build``, or the PTX text JIT-compiled by the driver when
no ``ptxas`` is on PATH), device allocations and copies, tiled tensor-map encoding, and one
launch (``cuLaunchKernelEx`` when a cluster shape must be given at launch time, the launch is
cooperative, or it is the programmatic dependent of the launch before it in its stream). Every
driver call's status is checked; a failing call raises ``GpuError`` naming the call and the
driver's error name (``CUDA_ERROR_ILLEGAL_ADDRESS``...).

Parameters are passed as raw bytes, one blob per PTX ``.param`` with exactly the size the
PTX declares (B10 of docs/validation.md: no ``int`` widened to ``intptr_t``, no ``float``
promoted to ``double``).
"""
from __future__ import annotations

import ctypes
import os
import shutil

from kverify.launch import dtypes

from .build import ARCH, PTXAS_FLAGS

SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
_ATTR_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_LAUNCH_ATTR_COOPERATIVE = 2  # CU_LAUNCH_ATTRIBUTE_COOPERATIVE: cudaLaunchCooperativeKernel
_LAUNCH_ATTR_CLUSTER_DIMENSION = 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
_LAUNCH_ATTR_PROGRAMMATIC = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (PDL)


class GpuUnavailable(Exception):
    """No driver, no device, or the driver refuses to start: validation cannot run here."""


class GpuError(Exception):
    """A driver call failed; ``name`` is the driver's error name."""

    def __init__(self, what: str, code: int, name: str):
        super().__init__(f"{what}: {name} ({code})")
        self.what, self.code, self.name = what, code, name


class _LaunchAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint8 * 64)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttr)), ("numAttrs", ctypes.c_uint)]


def _load_driver():
    names = ["libcuda.so.1", "libcuda.so"]
    last = None
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            last = e
    raise GpuUnavailable(f"no CUDA driver (libcuda.so.1 could not be loaded: {last})")


class Gpu:
    """Device 0 with its primary context, current on the calling thread."""

    def __init__(self):
        self.cu = _load_driver()
        rc = self.cu.cuInit(0)
        if rc != 0:
            raise GpuUnavailable(f"cuInit failed: {self._errname(rc)} ({rc})")
        n = ctypes.c_int()
        self.check(self.cu.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
        if n.value < 1:
            raise GpuUnavailable("the CUDA driver reports no device")
        self.dev = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.dev), "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        buf = ctypes.create_string_buffer(256)
        self.check(self.cu.cuDeviceGetName(buf, 256, self.dev), "cuDeviceGetName")
        self.name = buf.value.decode()
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(major), 75, self.dev), "cc major")
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.dev), "cc minor")
        self.cc = (major.value, minor.value)
        ver = ctypes.c_int()
        self.check(self.cu.cuDriverGetVersion(ctypes.byref(ver)), "cuDriverGetVersion")
        self.driver_version = ver.value
        self.cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        self.cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        self.cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]

    # ------------------------------------------------------------------ errors
    def _errname(self, rc: int) -> str:
        s = ctypes.c_char_p()
        if self.cu.cuGetErrorName(rc, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return f"CUDA error {rc}"

    def check(self, rc: int, what: str):
        if rc != 0:
            raise GpuError(what, rc, self._errname(rc))

    def describe(self) -> dict:
        return {"name": self.name, "compute_capability": f"{self.cc[0]}.{self.cc[1]}",
                "driver_version": self.driver_version}

    # ------------------------------------------------------------------ modules
    def load(self, image: bytes, what: str = "module"):
        """``cuModuleLoadData`` of a cubin, or of NUL-terminated PTX text."""
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), f"load {what}")
        return mod

    def unload(self, mod):
        self.cu.cuModuleUnload(mod)

    def function(self, mod, name: str, dynamic_smem: int = 0):
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), f"get function {name}")
        if dynamic_smem > 48 * 1024:
            self.check(self.cu.cuFuncSetAttribute(fn, _ATTR_MAX_DYNAMIC_SHARED, dynamic_smem),
                       "raise the dynamic shared memory limit")
        return fn

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int) -> int:
        p = ctypes.c_uint64()
        self.check(self.cu.cuMemAlloc_v2(ctypes.byref(p), max(int(nbytes), 1)), "cuMemAlloc")
        return p.value

    def free(self, ptr: int):
        self.cu.cuMemFree_v2(ptr)

    def htod(self, ptr: int, arr):
        if arr.nbytes:
            self.check(self.cu.cuMemcpyHtoD_v2(ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")

    def dtoh(self, arr, ptr: int):
        if arr.nbytes:
            self.check(self.cu.cuMemcpyDtoH_v2(arr.ctypes.data, ptr, arr.nbytes), "cuMemcpyDtoH")
        return arr

    def synchronize(self, what: str = "kernel"):
        self.check(self.cu.cuCtxSynchronize(), f"{what} (synchronize)")

    # ------------------------------------------------------------------ tensor maps
    def tensor_map(self, ptr: int, dtype: str, shape, strides_bytes, box, swizzle: str = "none") -> bytes:
        """A tiled ``CUtensorMap`` (128 bytes). ``shape``, ``strides_bytes`` (outer dims
        only) and ``box`` are outermost-first, as numpy writes them; the driver wants them
        innermost-first."""
        rank = len(shape)
        tm = (ctypes.c_uint8 * 192)()
        addr = (ctypes.addressof(tm) + 63) // 64 * 64
        gdim = (ctypes.c_uint64 * rank)(*reversed([int(s) for s in shape]))
        gstr = (ctypes.c_uint64 * max(rank - 1, 1))(*reversed([int(s) for s in strides_bytes]))
        bx = (ctypes.c_uint32 * rank)(*reversed([int(b) for b in box]))
        estr = (ctypes.c_uint32 * rank)(*([1] * rank))
        self.check(self.cu.cuTensorMapEncodeTiled(
            ctypes.c_void_p(addr), dtypes.dtype(dtype).tmap, rank, ctypes.c_void_p(ptr), gdim, gstr, bx, estr,
            0, SWIZZLE[swizzle], 2, 0), "cuTensorMapEncodeTiled")
        return ctypes.string_at(addr, 128)

    def tensor_map_im2col(self, ptr: int, dtype: str, shape, strides_bytes, lower, upper, channels_per_pixel: int,
                          pixels_per_column: int, swizzle: str = "none", oob_fill: str = "zero") -> bytes:
        """An im2col ``CUtensorMap`` (128 bytes, ``cuTensorMapEncodeIm2col``). ``shape``
        (``[N, (D,) (H,) W, C]``), ``strides_bytes`` (outer dims) and the corners
        (``[(D,) (H,) W]``) are outermost-first, as the launch spec writes them; the driver
        wants them innermost-first. Element strides are all 1."""
        rank = len(shape)
        tm = (ctypes.c_uint8 * 192)()
        addr = (ctypes.addressof(tm) + 63) // 64 * 64
        gdim = (ctypes.c_uint64 * rank)(*reversed([int(s) for s in shape]))
        gstr = (ctypes.c_uint64 * max(rank - 1, 1))(*reversed([int(s) for s in strides_bytes]))
        lo = (ctypes.c_int * max(rank - 2, 1))(*reversed([int(x) for x in lower]))
        hi = (ctypes.c_int * max(rank - 2, 1))(*reversed([int(x) for x in upper]))
        estr = (ctypes.c_uint32 * rank)(*([1] * rank))
        self.check(self.cu.cuTensorMapEncodeIm2col(
            ctypes.c_void_p(addr), dtypes.dtype(dtype).tmap, rank, ctypes.c_void_p(ptr), gdim, gstr, lo, hi,
            ctypes.c_uint32(int(channels_per_pixel)), ctypes.c_uint32(int(pixels_per_column)), estr, 0,
            SWIZZLE[swizzle], 2, 1 if oob_fill == "nan" else 0), "cuTensorMapEncodeIm2col")
        return ctypes.string_at(addr, 128)

    # ------------------------------------------------------------------ launch
    def stream(self):
        """A new non-blocking stream (``cuStreamCreate``); a PDL pair is launched into one."""
        st = ctypes.c_void_p()
        self.check(self.cu.cuStreamCreate(ctypes.byref(st), 1), "cuStreamCreate")
        return st

    def launch(self, fn, grid, block, params: list, smem: int = 0, cluster=None, cooperative: bool = False,
               programmatic: bool = False, stream=None):
        """Launch with one bytes blob per kernel parameter; returns once it is enqueued.
        ``cooperative``: a cooperative launch (every CTA co-resident; cooperative groups' grid
        workspace given). ``programmatic``: programmatic stream serialization, so the launch may
        start before the previous launch in ``stream`` completes (PDL: its CTAs' ``griddepcontrol``)."""
        grid, block = (list(grid) + [1, 1])[:3], (list(block) + [1, 1])[:3]  # [x] / [x, y]: the rest are 1
        holders = [ctypes.create_string_buffer(bytes(b), max(len(b), 1)) for b in params]
        argv = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.cast(h, ctypes.c_void_p) for h in holders])
        want = []
        if cluster and tuple(cluster) != (1, 1, 1):
            want.append((_LAUNCH_ATTR_CLUSTER_DIMENSION, (ctypes.c_uint * 3)(*cluster)))
        if cooperative:
            want.append((_LAUNCH_ATTR_COOPERATIVE, ctypes.c_int(1)))
        if programmatic:
            want.append((_LAUNCH_ATTR_PROGRAMMATIC, ctypes.c_int(1)))
        if want:
            attrs = (_LaunchAttr * len(want))()
            for a, (aid, value) in zip(attrs, want):
                a.id = aid
                ctypes.memmove(ctypes.addressof(a.value), ctypes.addressof(value), ctypes.sizeof(value))
            cfg = _LaunchConfig(*[int(g) for g in grid], *[int(b) for b in block], int(smem), stream, attrs, len(want))
            self.check(self.cu.cuLaunchKernelEx(ctypes.byref(cfg), fn, argv, None), "cuLaunchKernelEx")
        else:
            self.check(self.cu.cuLaunchKernel(fn, *[int(g) for g in grid], *[int(b) for b in block], int(smem),
                                              stream, argv, None), "cuLaunchKernel")


def have_ptxas() -> bool:
    return shutil.which("ptxas") is not None


def module_image(ptx: str, arch: str = ARCH) -> tuple[bytes, str]:
    """The image to load for ``ptx`` and how it was made: a cubin from ``ptxas`` with the
    pinned flags (``--fmad=false``) when ptxas is on PATH, else the PTX text for the
    driver's JIT (which contracts mul+add without rounding modifiers as it likes)."""
    if have_ptxas() and not os.environ.get("KVERIFY_DRIVER_JIT"):
        from .build import assemble

        return assemble(ptx, arch), f"ptxas -arch={arch} {' '.join(PTXAS_FLAGS)}"
    return ptx.encode() + b"\0", "driver JIT"

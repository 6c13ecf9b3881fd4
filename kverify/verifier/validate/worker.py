"""The process that touches the GPU: ``python -m kverify.verifier.validate.worker PLAN.json``.

Reads a plan written by ``kverify.verifier.validate`` (the module image, the kernel, and one entry
per run: launch shape, parameter blobs, and an ``.npz`` with every buffer's initial
contents; a run may be ``cooperative``, and may name a ``dependent`` grid launched after it in
the same stream with programmatic stream serialization, a PDL pair, whose parameters name
buffers of the same run), and for each run allocates *fresh* device buffers (every allocation is kept
until the process ends, so no two runs share an address), each between two red zones of
known bytes, copies the contents in, launches, synchronizes, and writes every buffer back
(``<out>.npz``) with the state of its red zones. It prints one JSON line per event
(``device``, ``start``, ``done``, ``error``) and flushes each, so the parent can tell a
hang (no ``done`` within the timeout) from a crash. It imports only numpy and
``kverify.lowering.gpu``: nothing of the candidate runs here but its kernel.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np

REDZONE = 256
RED_BYTE = 0xCB


def emit(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def main(argv) -> int:
    from kverify.lowering.gpu import Gpu, GpuError, GpuUnavailable

    plan = json.loads(open(argv[0]).read())
    try:
        gpu = Gpu()
    except GpuUnavailable as e:
        emit(event="unavailable", reason=str(e))
        return 3
    except GpuError as e:
        emit(event="unavailable", reason=str(e))
        return 3
    emit(event="device", **gpu.describe())
    return run_plan(gpu, plan, emit)


def run_plan(gpu, plan: dict, emit=emit, keep: list | None = None) -> int:
    """Run every run of ``plan`` on ``gpu`` (a ``kverify.lowering.gpu.Gpu``); 0 when all completed."""
    from kverify.lowering.gpu import GpuError

    try:
        image = open(plan["image"], "rb").read()
        if plan.get("image_is_ptx"):
            image += b"\0"
        mod = gpu.load(image, plan["kernel"])
        fn = gpu.function(mod, plan["kernel"], int(plan.get("dynamic_smem", 0)))
    except GpuError as e:
        emit(event="error", run=None, what=e.what, name=e.name, message=str(e))
        return 1
    keep = [] if keep is None else keep
    for run in plan["runs"]:
        rid = run["id"]
        try:
            data = dict(np.load(run["npz"]))
            ptrs = {}
            for name, arr in data.items():
                raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
                padded = (raw.size + 255) // 256 * 256
                total = REDZONE + padded + REDZONE
                base = gpu.alloc(total)
                keep.append(base)
                fill = np.full(total, RED_BYTE, np.uint8)
                fill[REDZONE:REDZONE + raw.size] = raw
                gpu.htod(base, fill)
                ptrs[name] = (base, raw.size, total)
            blobs = _blobs(gpu, run["params"], ptrs)
            dep = run.get("dependent")
            if dep is not None:
                dfn = gpu.function(mod, dep["kernel"], int(dep.get("dynamic_smem", 0)))
                dblobs = _blobs(gpu, dep["params"], ptrs)
            emit(event="start", run=rid)
            t0 = time.perf_counter()
            stream = gpu.stream() if dep is not None else None
            gpu.launch(fn, run["grid"], run["block"], blobs, int(plan.get("dynamic_smem", 0)),
                       run.get("cluster"), cooperative=bool(run.get("cooperative")), stream=stream)
            if dep is not None:
                gpu.launch(dfn, dep["grid"], dep["block"], dblobs, int(dep.get("dynamic_smem", 0)),
                           dep.get("cluster"), cooperative=bool(dep.get("cooperative")), programmatic=True,
                           stream=stream)
            gpu.synchronize(f"run {rid}")
            if stream is not None:
                gpu.cu.cuStreamDestroy_v2(stream)
            ms = (time.perf_counter() - t0) * 1e3
            out, red = {}, {}
            for name, arr in data.items():
                base, size, total = ptrs[name]
                back = gpu.dtoh(np.empty(total, np.uint8), base)
                out[name] = back[REDZONE:REDZONE + size].copy().view(arr.dtype).reshape(arr.shape)
                zone = np.concatenate([back[:REDZONE], back[REDZONE + size:]])
                red[name] = int(np.count_nonzero(zone != RED_BYTE))
            np.savez(run["out"], **out)
            emit(event="done", run=rid, ms=ms, redzone=red, pointers={k: v[0] + REDZONE for k, v in ptrs.items()})
        except GpuError as e:
            emit(event="error", run=rid, what=e.what, name=e.name, message=str(e))
            return 1
    gpu.unload(mod)
    return 0


def _blobs(gpu, params: list, ptrs: dict) -> list:
    """One bytes blob per kernel parameter: a buffer's device address (past its red zone), an
    encoded tensor map, or the given bytes."""
    blobs = []
    for prm in params:
        if prm["kind"] == "buffer":
            blobs.append((ptrs[prm["buffer"]][0] + REDZONE).to_bytes(8, "little"))
        elif prm["kind"] == "tensormap" and prm.get("mode") == "im2col":
            t = prm
            blobs.append(gpu.tensor_map_im2col(ptrs[t["buffer"]][0] + REDZONE, t["dtype"], t["shape"],
                                               t["strides_bytes"], t["lower_corner"], t["upper_corner"],
                                               t["channels_per_pixel"], t["pixels_per_column"],
                                               t.get("swizzle", "none"), t.get("oob_fill", "zero")))
        elif prm["kind"] == "tensormap":
            t = prm
            blobs.append(gpu.tensor_map(ptrs[t["buffer"]][0] + REDZONE, t["dtype"], t["shape"],
                                        t["strides_bytes"], t["box"], t.get("swizzle", "none")))
        else:
            blobs.append(bytes.fromhex(prm["hex"]))
    return blobs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

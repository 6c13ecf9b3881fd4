"""Launch specs: the JSON that says how to run a kernel (shared by ``run``, ``check``,
``equiv`` and ``validate``)::

    {"kernel": "k", "grid": [x,y,z], "block": [x,y,z], "cluster": [x,y,z],
     "args": {"n": 1024}, "buffers": {"a": {"dtype": "float32", "shape": [1024]}},
     "tensormaps": {"tmap": {"dtype": "float32", "shape": [64, 64], "box": [32, 32],
                             "swizzle": "none", "buffer": "in"}},
     "outputs": ["c"]}

``args``, ``buffers`` and ``tensormaps`` are keyed by parameter name (CUDA name when the
source is known, PTX ``.param`` name otherwise) or by zero-based parameter position. A
by-value parameter is an ``args`` entry ``{"bytes": "<hex>"}`` or ``{"struct": {"<offset>":
FIELD}}`` (``params``). ``from_dict`` checks the whole spec against ``schema`` first.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from kverify.semantics.ir import KernelError

from . import dtypes, schema


def _dim3(v, what, path):
    if v is None:
        return (1, 1, 1)
    if isinstance(v, int):
        v = [v]
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= 3 or not all(isinstance(x, int) and x > 0 for x in v):
        raise KernelError(f"launch spec: {what} must be 1 to 3 positive integers, got {v!r}", path, 1, 1)
    return tuple(v) + (1,) * (3 - len(v))


def _dtype_name(name, what, path, keys=()) -> str:
    """The canonical name of a buffer's or tensor map's dtype spelling."""
    r = dtypes.lookup(name)
    if r is None:
        raise KernelError(f"launch spec: {what} has unknown dtype {name!r} (valid: {dtypes.names()})", path,
                          *schema.locate(path, list(keys)))
    return r.name


def _struct_dtypes(a, keys, path):
    """An ``args`` value with the dtypes of the tensor maps of a by-value struct made canonical."""
    if not (isinstance(a, dict) and "struct" in a):
        return a
    fields = {}
    for off, f in a["struct"].items():
        if "tensormap" in f:
            t = f["tensormap"]
            f = {"tensormap": {**t, "dtype": _dtype_name(t["dtype"], f"{'.'.join(keys)}.struct.{off}.tensormap",
                                                         path, [*keys, "struct", off, "tensormap", "dtype"])}}
        fields[off] = f
    return {"struct": fields}


@dataclass(frozen=True)
class LaunchSpec:
    kernel: str | None
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    cluster: tuple = (1, 1, 1)
    args: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)
    tensormaps: dict = field(default_factory=dict)
    outputs: tuple = ()
    dynamic_smem: int = 0
    path: str = "<launch>"
    grid_assumed: bool = False  # no grid was given: (1, 1, 1) runs, proofs must not rest on it
    assume: tuple = ()  # preconditions over the scalar parameters (``--assume``; ``symbolic.assume``)
    # summaries of body-less functions (``--extern-summary``; ``symbolic.extern``): (PTX name, kind) pairs
    extern: tuple = ()
    # a cooperative launch (cudaLaunchCooperativeKernel): every CTA co-resident, and the grid
    # workspace cooperative groups' grid.sync() reads through %envreg1/%envreg2 exists. None:
    # assumed when the kernel reads that workspace (the bound says so)
    cooperative: bool | None = None
    # the grid launched after this one as its programmatic dependent (PDL: programmatic stream
    # serialization): ``{"kernel", "grid", "block", "cluster", "dynamic_smem", "args", "outputs",
    # "buffers": {PARAM: "<a buffer of this launch>" | {"dtype", "shape"}}}`` (``dependent_spec``)
    dependent: dict | None = None
    # by-value struct parameters the launch gives no bytes for, whose 8-byte slots the kernel
    # uses as global addresses (``params.with_struct_pointers``): parameter key -> {"pointers":
    # {offset: buffer name}, "other_bytes": whether the kernel reads bytes besides them}. Their
    # ``args`` entry holds those pointer fields; the buffers are sized from the accesses
    struct_pointers: dict = field(default_factory=dict)
    cluster_given: bool = field(default=True, compare=False)  # False: a spec without "cluster" (``for_kernel``)
    # where the block size came from when no launch gave one: ".reqntid" or ".maxntid" (the
    # largest block the kernel allows: a proof over it does not cover smaller launches)
    block_from: str | None = field(default=None, compare=False)

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @staticmethod
    def from_dict(d: dict, path: str = "<launch>") -> "LaunchSpec":
        if not isinstance(d, dict):
            raise KernelError("launch spec: expected a JSON object", path, 1, 1)
        known = {"kernel", "grid", "block", "cluster", "args", "buffers", "tensormaps", "outputs",
                 "dynamic_smem", "shared_bytes", "cooperative", "dependent"}
        extra = set(d) - known
        if extra:
            raise KernelError(f"launch spec: unknown key(s) {', '.join(sorted(extra))}", path, 1, 1)
        schema.check(d, path)  # every key's type and shape, before anything runs
        buffers = {}
        for name, b in (d.get("buffers") or {}).items():
            buffers[name] = {**b, "dtype": _dtype_name(b["dtype"], f"buffer {name!r}", path,
                                                       ["buffers", name, "dtype"])}
        tensormaps = {}
        for name, t in (d.get("tensormaps") or {}).items():
            tensormaps[name] = {**t, "dtype": _dtype_name(t["dtype"], f"tensor map {name!r}", path,
                                                          ["tensormaps", name, "dtype"])}
        args = {k: _struct_dtypes(a, ["args", k], path) for k, a in (d.get("args") or {}).items()}
        dep = d.get("dependent")
        if dep is not None:
            dep = dict(dep, buffers={k: b if isinstance(b, str) else
                                     {**b, "dtype": _dtype_name(b["dtype"], f"dependent buffer {k!r}", path,
                                                                ["dependent", "buffers", k, "dtype"])}
                                     for k, b in (dep.get("buffers") or {}).items()})
            for k, b in dep["buffers"].items():
                if isinstance(b, str) and b not in buffers:
                    raise KernelError(f"launch spec: dependent.buffers.{k}: {b!r} is not a buffer of this launch "
                                      f"(its buffers: {', '.join(buffers) or 'none'})", path,
                                      *schema.locate(path, ["dependent", "buffers", k]))
        return LaunchSpec(d.get("kernel"), _dim3(d.get("grid") or d.get("cluster"), "grid", path),
                          _dim3(d.get("block"), "block", path), _dim3(d.get("cluster"), "cluster", path),
                          args, buffers, tensormaps, tuple(d.get("outputs") or ()),
                          int(d.get("dynamic_smem") or d.get("shared_bytes") or 0), path, d.get("grid") is None,
                          cooperative=d.get("cooperative"), dependent=dep, cluster_given=d.get("cluster") is not None)

    def for_kernel(self, kernel) -> "LaunchSpec":
        """This launch as the driver runs ``kernel``: a kernel compiled with cluster dimensions
        (``.reqnctapercluster``, ``__cluster_dims__``) runs in clusters of that shape when the
        launch names none, and a launch that names other ones fails (``KernelError``)."""
        v = kernel.directive("reqnctapercluster")
        if not v:
            return self
        want = tuple(int(x) for x in v) + (1,) * (3 - len(v))
        if self.cluster_given and tuple(self.cluster) != want:
            raise KernelError(f"launch spec: cluster {list(self.cluster)} differs from {kernel.name}'s "
                              f".reqnctapercluster {list(want)}: the driver refuses such a launch", self.path,
                              *schema.locate(self.path, ["cluster"]))
        if self.grid_assumed:  # no grid given: one cluster runs
            return self if (tuple(self.grid), tuple(self.cluster)) == (want, want) else \
                replace(self, grid=want, cluster=want, cluster_given=True)
        for i, (g, c) in enumerate(zip(self.grid, want)):
            if g % c:
                raise KernelError(f"launch spec: grid dimension {'xyz'[i]} ({g}) must be a multiple of "
                                  f"{kernel.name}'s cluster dimension ({c}, .reqnctapercluster)", self.path,
                                  *schema.locate(self.path, ["grid"]))
        return self if tuple(self.cluster) == want else replace(self, cluster=want, cluster_given=True)

    def dependent_spec(self) -> tuple["LaunchSpec", dict]:
        """The dependent grid's launch (its shared buffers typed like this launch's) and which of
        its parameters are buffers of this launch (parameter -> buffer name)."""
        d = self.dependent
        shared = {k: b for k, b in d["buffers"].items() if isinstance(b, str)}
        buffers = {k: (self.buffers[b] if isinstance(b, str) else b) for k, b in d["buffers"].items()}
        return LaunchSpec.from_dict({**{k: v for k, v in d.items() if k != "buffers"}, "buffers": buffers},
                                    self.path), shared

    def to_dict(self) -> dict:
        """The JSON form ``from_dict`` reads."""
        d = {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
             "cluster": list(self.cluster), "args": dict(self.args), "buffers": dict(self.buffers)}
        if self.tensormaps:
            d["tensormaps"] = dict(self.tensormaps)
        if self.outputs:
            d["outputs"] = list(self.outputs)
        if self.dynamic_smem:
            d["dynamic_smem"] = self.dynamic_smem
        if self.cooperative is not None:
            d["cooperative"] = self.cooperative
        if self.dependent is not None:
            d["dependent"] = self.dependent
        return d

    @staticmethod
    def load(path: str) -> "LaunchSpec":
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise KernelError(f"cannot read launch spec: {e.strerror}", path, 0, 0) from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise KernelError(f"launch spec: {e.msg}", path, e.lineno, e.colno) from None
        return LaunchSpec.from_dict(d, path)


def lookup(mapping: dict, kernel, index: int):
    """The entry of ``mapping`` for parameter ``index`` of ``kernel`` (by CUDA name, PTX
    name or position), or ``None``."""
    p = kernel.params[index]
    for key in (p.source_name, p.name, str(index), index):
        if key is not None and key in mapping:
            return mapping[key]
    return None


def param_key(kernel, index: int) -> str:
    p = kernel.params[index]
    return p.source_name or p.name

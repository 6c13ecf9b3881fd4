"""The layout of one launch in the equivalence walk: the input/output buffers in global
memory and the module-scope ``.global`` variables after them, ``SPACING`` bytes apart, the
buffer each global access's address is derived from (``ptr_base``, the interpreter's
``provenance`` rule), the parameter bytes (by-value arguments and buffer
addresses), the offsets of ``.shared``/``.local``/``.const`` variables, and the values of
the special registers (PTX ISA 10, special registers) for a thread of the launch.
"""
from __future__ import annotations

from dataclasses import dataclass

from kverify.launch import dtypes, lookup, param_key
from kverify.launch.params import param_bytes
from kverify.launch.layout import GLOBAL_BASE, SHARED_WINDOW, align_up, local_layout, shared_layout
from kverify.semantics.interpreter.provenance import pointer_bases
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Sym

#: distance between the starts of two global buffers (and module-scope variables) of the walk:
#: an address computed from one with a 32-bit index (|index * element size| < 2**35) stays out
#: of every other buffer smaller than 2**35 bytes, so an overflow lands in no buffer (Memory
#: .global_buffer stops there) instead of reading or writing a neighbour's bytes
SPACING = 1 << 36


@dataclass
class Buffer:
    name: str  # the name used for its symbolic variables (shared by both kernels)
    param: str  # the kernel's own parameter name
    dtype: str
    shape: tuple
    start: int  # global address
    esize: int

    @property
    def count(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.count * self.esize


class Layout:
    """The layout part of :class:`~.executor.Executor`."""

    # ------------------------------------------------------------------ layout
    def _layout(self, names):
        spec, kernel = self.spec, self.kernel
        self.buffers: list[Buffer] = []
        off = 0
        for i, p in enumerate(kernel.params):
            b = lookup(spec.buffers, kernel, i)
            if b is None:
                continue
            key = param_key(kernel, i)
            shape = tuple(int(s) for s in b["shape"])
            buf = Buffer(names.get(key, key), key, b["dtype"], shape, GLOBAL_BASE + off,
                         dtypes.itemsize(b["dtype"]))
            self.buffers.append(buf)
            off = self._next_start(off, buf.nbytes)
        by_key = {b.param: b for b in self.buffers}
        keys = {p.name: param_key(kernel, i) for i, p in enumerate(kernel.params)}
        self.ptr_base = {iid: by_key[keys[name]] for iid, name in pointer_bases(kernel).items()
                         if keys.get(name) in by_key}
        for i, p in enumerate(kernel.params):
            key = param_key(kernel, i)
            if p.array:
                raise Unsupported(f"by-value array parameter {key} (tensor maps are not supported)")
            if key not in by_key and isinstance(lookup(spec.args, kernel, i), dict):
                raise Unsupported(f"by-value parameter {key} given as bytes or struct fields")
        # the parameter bytes as the interpreter builds them (a missing or misfit value is bad input)
        image = param_bytes(kernel, spec, {b.param: (b.start - GLOBAL_BASE, b.dtype, b.shape) for b in self.buffers})
        self.param_off = {name: o for name, (o, _) in image.offsets.items()}
        self.param_bytes = {o + j: int(image.data[o + j]) for o, size in image.offsets.values() for j in range(size)}
        # the interpreter's layout (kverify.launch.layout); no red zones: this walk does not check shared bounds
        smem, self.smem_size = shared_layout(self.module, kernel, spec.dynamic_smem, red_zone=0)
        self.smem_vars = {name: off for name, (off, _) in smem.items()}
        self.local_vars = {name: off for name, (off, _) in local_layout(kernel)[0].items()}
        self.const_bytes = {}
        self.const_vars = {}
        coff = 0
        for v in self.module.vars:
            if v.space == "const":
                coff = align_up(coff, v.align or 8)
                self.const_vars[v.name] = coff
                if v.init:
                    esz = v.type.bits // 8
                    for j, x in enumerate(v.init):
                        if isinstance(x, Sym):  # an address this walk does not lay out: reading it stops
                            continue
                        for k in range(esz):
                            self.const_bytes[coff + j * esz + k] = (int(x) >> (8 * k)) & 0xFF
                coff += v.size
        # module-scope .global variables follow the buffers (as in the interpreter). One with an
        # initializer (libdevice's __CUDA_FTZ, Triton's _$_str) reads as its constant bytes; one
        # without is state shared with other launches: reading it stops the run, and so does any
        # store to a module-scope variable (see Memory.store).
        self.gvar_addr = {}
        self.gvar_bytes = {}
        self.gvar_ranges = []
        self.gvars_read = set()
        for v in self.module.vars:
            if v.space != "global":
                continue
            size = max(v.size, 1)
            start = GLOBAL_BASE + off
            self.gvar_addr[v.name] = start
            self.gvar_ranges.append((start, start + size, v))
            if v.init:
                esz = v.type.bits // 8
                for j in range(size):
                    self.gvar_bytes[start + j] = 0
                for j, x in enumerate(v.init):
                    for k in range(esz):
                        if isinstance(x, Sym):  # an address this walk does not lay out: reading it stops
                            self.gvar_bytes.pop(start + j * esz + k, None)
                        else:
                            self.gvar_bytes[start + j * esz + k] = (int(x) >> (8 * k)) & 0xFF
            off = self._next_start(off, size)

    @staticmethod
    def _next_start(off, nbytes):
        if nbytes >= SPACING // 2 or GLOBAL_BASE + off + SPACING >= SHARED_WINDOW:
            raise Unsupported(f"global buffers and variables of more than {SPACING // 2} bytes, or too many of them "
                              f"for the walk's layout ({SPACING} bytes apart)")
        return off + SPACING

    def global_var_at(self, addr):
        for lo, hi, v in self.gvar_ranges:
            if lo <= addr < hi:
                return v
        return None

    def buffer_at(self, addr):
        for b in self.buffers:
            if b.start <= addr < b.start + b.nbytes:
                return b
        return None


def _dim(v, comp):
    return v[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)]


SPECIAL = {
    "%tid": lambda e, t, c: _dim(t.tid, c),
    "%ntid": lambda e, t, c: _dim(e.spec.block, c),
    "%ctaid": lambda e, t, c: _dim(t.cta.ctaid, c),
    "%nctaid": lambda e, t, c: _dim(e.spec.grid, c),
    "%laneid": lambda e, t, c: t.linear % 32,
    "%nwarpid": lambda e, t, c: 64,
    "%warpsize": lambda e, t, c: 32,
    "%lanemask_eq": lambda e, t, c: 1 << (t.linear % 32),
    "%lanemask_lt": lambda e, t, c: (1 << (t.linear % 32)) - 1,
    "%lanemask_le": lambda e, t, c: ((1 << (t.linear % 32 + 1)) - 1) & 0xFFFFFFFF,
    "%lanemask_gt": lambda e, t, c: (~((1 << (t.linear % 32 + 1)) - 1)) & 0xFFFFFFFF,
    "%lanemask_ge": lambda e, t, c: (~((1 << (t.linear % 32)) - 1)) & 0xFFFFFFFF,
    "%cluster_ctarank": lambda e, t, c: 0,
    "%cluster_nctarank": lambda e, t, c: 1,
    "%cluster_ctaid": lambda e, t, c: 0,
    "%cluster_nctaid": lambda e, t, c: 1,
    "%clusterid": lambda e, t, c: _dim(t.cta.ctaid, c),
    "%nclusterid": lambda e, t, c: _dim(e.spec.grid, c),
    "%is_explicit_cluster": lambda e, t, c: False,
    "%dynamic_smem_size": lambda e, t, c: e.spec.dynamic_smem,
}

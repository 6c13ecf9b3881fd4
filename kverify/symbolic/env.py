"""The launch as the symbolic engine sees it: grid and block dimensions (from a launch spec,
``.reqntid``/``.maxntid``, or symbolic with their limits), kernel parameters (concrete
argument values or symbols), the shared-memory layout, the special registers, and the
per-thread symbols, created in (thread A, thread B) pairs so that thread B's terms are
thread A's with the pairs substituted.

PTX ISA (9.0): §10 special registers (%tid, %ntid, %ctaid, %nctaid, %laneid, %lanemask_*);
§5.1.4 shared state space (layout of static, then dynamic, shared variables).
"""
from __future__ import annotations

import z3

from kverify.launch.layout import shared_layout
from kverify.semantics.ir.nodes import operand_regs
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.ir.visit import reachable_instructions
from kverify.semantics.values import float_to_bits

from .terms import keys


class Env:
    """The launch: grid/block dims, kernel parameters, shared-memory layout, and the
    per-thread symbols, created in (A, B) pairs."""

    def __init__(self, module, kernel, launch=None):
        self.module = module
        self.kernel = kernel
        self.launch = launch
        self.pairs: list = []  # (A const, B const)
        self.approx: set = set()  # names of approximate symbols (both threads)
        # constraints as (term, keys): a constraint matters to a query only when the query
        # mentions one of its keys (the symbol it constrains), see smt._Checker.relevant
        self.constraints_a: list = []  # per-thread constraints, thread A (B by substitution)
        self.elect_full_mask: set = set()  # elect.sync choices made with the full membermask 0xffffffff
        self.shared_constraints: list = []
        self.assumptions: list = []  # human-readable
        self.uf_decls: dict = {}
        # --- dims
        self.scope: list = []  # what a proof over this Env covers, human-readable
        if launch is not None:
            self.ntid = tuple(z3.BitVecVal(v, 32) for v in launch.block)
            self.block = tuple(launch.block)
            self.scope.append(f"block {_dims(launch.block)} " + (
                "(the launch's)" if launch.block_from is None else "(from .reqntid)" if launch.block_from == ".reqntid"
                else "(from .maxntid, the largest the kernel allows: smaller blocks not covered)"))
        else:
            bd = kernel.block_dim
            if bd is not None:
                self.ntid = tuple(z3.BitVecVal(v, 32) for v in bd)
                self.block = tuple(bd)
                src = ".reqntid" if kernel.directive("reqntid") else ".maxntid (__launch_bounds__)"
                self.assumptions.append(f"block {bd[0]}x{bd[1]}x{bd[2]} from {src}")
                self.scope.append(f"block {_dims(bd)} (from {src})")
            else:
                self.ntid = tuple(z3.BitVec(f"ntid.{d}", 32) for d in "xyz")
                self.block = None
                lim = (1024, 1024, 64)
                for v, m in zip(self.ntid, lim):
                    self.shared_constraints.append((z3.And(z3.UGE(v, 1), z3.ULE(v, m)), keys(v)))
                x, y, zz = self.ntid
                self.shared_constraints.append((z3.ULE(x * y * zz, 1024), keys(x, y, zz)))
                self.assumptions.append("block size symbolic (no launch spec, no .reqntid)")
                self.scope.append("every block size (at most 1024 threads)")
        if launch is not None and not launch.grid_assumed:
            self.nctaid = tuple(z3.BitVecVal(v, 32) for v in launch.grid)
            self.grid = tuple(launch.grid)
            self.scope.append(f"grid {_dims(launch.grid)} only (the launch's)")
        else:
            # grid symbolic; a dimension the kernel never reads is 1 (launching more CTAs
            # along it only repeats the work: a launch error, not a kernel property), and
            # the global thread index along each dimension fits in a signed 32-bit int
            used = _grid_dims_read(module, kernel)
            self.nctaid = tuple(z3.BitVec(f"nctaid.{d}", 32) if d in used else z3.BitVecVal(1, 32)
                                for d in "xyz")
            self.grid = None
            for d, v, n, m in zip("xyz", self.nctaid, self.ntid, ((1 << 31) - 1, 65535, 65535)):
                if d not in used:
                    continue
                fits = z3.ULE(z3.ZeroExt(32, v) * z3.ZeroExt(32, n), (1 << 31) - 1)
                self.shared_constraints.append((z3.And(z3.UGE(v, 1), z3.ULE(v, m), fits), keys(v)))
            dims_read = ", ".join(f"gridDim.{d}" for d in "xyz" if d in used) or "no dimension"
            self.assumptions.append(f"grid symbolic (no grid given): {dims_read} read by the kernel, the "
                                    "others 1; gridDim*blockDim < 2^31 along each dimension")
            self.scope.append(f"every grid ({dims_read} read by the kernel, the others 1)")
        self.tid = tuple(self.fresh(f"tid.{d}", 32) for d in "xyz")
        self.ctaid = tuple(self.fresh(f"ctaid.{d}", 32) for d in "xyz")
        for t, n in zip(self.tid, self.ntid):
            self.constraints_a.append((z3.ULT(t, n), keys(t)))
        for c, n in zip(self.ctaid, self.nctaid):
            self.constraints_a.append((z3.ULT(c, n), keys(c)))
        # --- params
        self.params: dict = {}  # PTX name -> (term, Param)
        self.param_values: dict = {}
        for i, p in enumerate(kernel.params):
            w = p.type.bits
            if p.array:
                continue
            v = self._launch_arg(i) if launch is not None else None
            if isinstance(v, dict):  # a by-value parameter given as bytes or struct fields
                v = None
            if v is not None:
                bits = _value_bits(v, p.type.name)
                self.params[p.name] = (z3.BitVecVal(bits, w), p)
                self.param_values[p.source_name or p.name] = v
            else:
                self.params[p.name] = (z3.BitVec(p.name, w), p)
        # --- by-value struct parameters whose fields the launch gives (kverify.launch.params)
        self.struct_fields: dict = {}  # PTX name -> {offset: field}
        for i, p in enumerate(kernel.params):
            v = self._launch_arg(i) if launch is not None else None
            if isinstance(v, dict) and isinstance(v.get("struct"), dict):
                self.struct_fields[p.name] = {int(o): f for o, f in v["struct"].items()}
        # structs whose pointer fields kverify found (``launch.params.with_struct_pointers``) and
        # whose other bytes the kernel reads: those bytes are free (every value), not zero
        inferred = getattr(launch, "struct_pointers", None) or {}
        self.free_struct_bytes = {p.name for p in kernel.params
                                  if inferred.get(p.source_name or p.name, {}).get("other_bytes")}
        self.struct_buffers = {b for v in inferred.values() for b in v["pointers"].values()}
        # --- preconditions over the scalar parameters (``--assume``: ``symbolic.assume``)
        self.preconditions: list = []  # the expressions, as given
        from .assume import preconditions

        for expr, c in preconditions(kernel, self.params, getattr(launch, "assume", ()) or ()):
            syms = [t for t, _ in self.params.values() if not z3.is_bv_value(t)]
            self.shared_constraints.append((c, keys(*syms)))
            self.preconditions.append(expr)
        # --- shared layout: the launch's (kverify.launch.layout), without red zones; the size of
        # dynamic shared memory is unknown (None) when the launch does not give it
        dyn = launch.dynamic_smem if launch is not None and launch.dynamic_smem else None
        placed, _ = shared_layout(module, kernel, dyn or 0, red_zone=0)
        self.shared_vars: list = []  # (name, base, size)
        self.shared_base: dict = {}
        for v in tuple(module.vars) + tuple(kernel.vars):
            if v.name in placed and v.name not in self.shared_base:
                off, size = placed[v.name]
                self.shared_vars.append((v.name, off, dyn if v.extern else size))
                self.shared_base[v.name] = off
        self.global_vars = {v.name for v in tuple(module.vars) + tuple(kernel.vars)
                            if v.space in ("global", "const")}

    def struct_load(self, pname: str, off: int, nbytes: int):
        """``(value, region)`` of ``nbytes`` loaded at byte ``off`` of the by-value struct
        parameter ``pname`` from the launch's fields: a scalar's bits (bytes no field covers are
        zero) as a ``nbytes*8``-bit value, or a pointer field as the symbolic base of the buffer
        it points into plus its offset (region ``param:<buffer>``, the region of that buffer's
        own parameter, if it has one). ``None`` when the load is partly a pointer or a tensor map."""
        from kverify.launch.params import _field_bytes
        from kverify.launch.schema import SCALAR_KINDS, TENSORMAP_BYTES

        fields = self.struct_fields.get(pname)
        if fields is None:
            return None
        image = bytearray(off + nbytes)
        covered = set()
        for o, f in fields.items():
            (kind, v), = f.items()
            width = 8 if kind == "ptr" else TENSORMAP_BYTES if kind == "tensormap" else SCALAR_KINDS[kind][0]
            if o + width <= off or o >= off + nbytes:
                continue
            if kind == "ptr" and o == off and nbytes == 8:
                name, extra = (v["buffer"], int(v.get("offset", 0))) if isinstance(v, dict) else (v, 0)
                return self.buffer_base(name) + extra, f"param:{name}"
            if kind in ("ptr", "tensormap"):
                return None
            image[o:o + width] = _field_bytes(kind, v)
            covered.update(range(o, o + width))
        value = z3.BitVecVal(int.from_bytes(bytes(image[off:off + nbytes]), "little"), 8 * nbytes)
        if pname in self.free_struct_bytes and not covered >= set(range(off, off + nbytes)):
            # bytes the launch gives no value for: one symbol per byte, the same for every thread
            parts = [z3.BitVecVal(image[j], 8) if j in covered else z3.BitVec(f"{pname}.byte{j}", 8)
                     for j in range(off, off + nbytes)]
            value = z3.simplify(z3.Concat(*reversed(parts))) if len(parts) > 1 else parts[0]
        return value, None

    def buffer_base(self, name: str):
        """The symbolic global address of launch buffer ``name``: its pointer parameter's term
        when it has one, else a symbol of its own (the same for both threads)."""
        for p in self.kernel.params:
            if (p.source_name or p.name) == name and p.name in self.params and p.type.bits == 64:
                return self.params[p.name][0]
        return z3.BitVec(f"buffer.{name}", 64)

    def symbolic_param_values(self, model, pointers=()) -> dict:
        """The value ``model`` gives each parameter the launch left symbolic (name -> int, signed
        for ``.s*`` types), leaving out ``pointers`` (names of parameters used as addresses,
        ``Executor.address_params``: a buffer's base address is arbitrary): what a
        counterexample over symbolic parameters must print."""
        out = {}
        for term, p in self.params.values():
            key = p.source_name or p.name
            if key in self.param_values or z3.is_bv_value(term) or key in pointers:
                continue
            v, w = model.eval(term, model_completion=True).as_long(), term.size()
            out[key] = v - (1 << w) if p.type.name.startswith("s") and v >> (w - 1) else v
        return out

    def show_value(self, v) -> str:
        """A parameter value as a counterexample's text prints it: the address of a function of the
        module by the function's name (a function pointer), anything else as it is."""
        if not hasattr(self, "_func_at"):
            from kverify.launch.layout import function_addresses

            self._func_at = {a: n for n, a in function_addresses(self.module).items()}
        if isinstance(v, int) and v in self._func_at:
            return f"{self._func_at[v]} ({v:#x})"
        return str(v)

    def _launch_arg(self, i, launch=None):
        p = self.kernel.params[i]
        args = getattr(launch or self.launch, "args", None) or {}
        for key in (p.source_name, p.name, str(i), i):
            if key is not None and key in args:
                return args[key]
        return None

    def values_from(self, launch) -> list:
        """``(symbol, value)`` pairs for the scalar parameters this Env left symbolic and
        ``launch`` gives values (the values the interpreter runs with)."""
        out = []
        for i, p in enumerate(self.kernel.params):
            term = self.params.get(p.name, (None,))[0]
            if term is None or not z3.is_const(term) or z3.is_bv_value(term):
                continue
            v = self._launch_arg(i, launch)
            if v is None or isinstance(v, (dict, list, str)):
                continue
            out.append((term, z3.BitVecVal(_value_bits(v, p.type.name), term.size())))
        return out

    def fresh(self, name: str, width: int, approx: bool = False):
        """A per-thread symbol: returns thread A's and registers the (A, B) pair."""
        if width == 1:
            a, b = z3.Bool(f"{name}!A"), z3.Bool(f"{name}!B")
        else:
            a, b = z3.BitVec(f"{name}!A", width), z3.BitVec(f"{name}!B", width)
        self.pairs.append((a, b))
        if approx:
            self.approx.add(f"{name}!A")
            self.approx.add(f"{name}!B")
        return a

    def uf_mem(self, region: str, width: int):
        name = f"mem[{region}].b{width}"
        if name not in self.uf_decls:
            self.uf_decls[name] = z3.Function(name, z3.BitVecSort(64), z3.BitVecSort(8),
                                              z3.BitVecSort(width))
        return self.uf_decls[name]

    def uf(self, name: str, nargs: int):
        if name not in self.uf_decls:
            self.uf_decls[name] = z3.Function(name, *([z3.BitVecSort(64)] * nargs), z3.BitVecSort(32))
        return self.uf_decls[name]

    def linear_tid(self, tid=None):
        x, y, zz = tid or self.tid
        nx, ny, _ = self.ntid
        return x + nx * (y + ny * zz)

    def shared_var_at(self, addr: int):
        for name, base, size in self.shared_vars:
            if base <= addr and (size is None or addr < base + size):
                return name, addr - base
        return None, addr

    def _cluster_special(self, base: str, i: int):
        """The cluster registers (§10.13-10.20) of thread A under the launch's cluster shape, as
        the interpreter lays clusters out (``specials.py``): position ``ctaid mod cluster``,
        rank ``x + cx * (y + cy * z)``, cluster id ``ctaid div cluster``."""
        c = tuple(z3.BitVecVal(v, 32) for v in self.launch.cluster)
        pos = tuple(z3.URem(a, n) for a, n in zip(self.ctaid, c))
        cx, cy, cz = self.launch.cluster
        if base == "%cluster_ctarank":
            return pos[0] + cx * (pos[1] + cy * pos[2])
        if base == "%cluster_nctarank":
            return z3.BitVecVal(cx * cy * cz, 32)
        if i < 0:
            return None
        return {"%cluster_ctaid": pos[i], "%cluster_nctaid": c[i], "%clusterid": z3.UDiv(self.ctaid[i], c[i]),
                "%nclusterid": z3.UDiv(self.nctaid[i], c[i])}.get(base)

    def special(self, name: str):
        """Thread A's value of a special register (§10), or None for one read as an
        approximate value."""
        parts = name.split(".")
        base, dim = parts[0], (parts[1] if len(parts) > 1 else "x")
        i = "xyz".find(dim) if dim in ("x", "y", "z") else -1
        if base == "%tid" and i >= 0:
            return self.tid[i]
        if base == "%ntid" and i >= 0:
            return self.ntid[i]
        if base == "%ctaid" and i >= 0:
            return self.ctaid[i]
        if base == "%nctaid" and i >= 0:
            return self.nctaid[i]
        if base == "%warpsize":
            return z3.BitVecVal(32, 32)
        if base.startswith(("%cluster", "%clusterid", "%nclusterid")) and self.launch is not None:
            v = self._cluster_special(base, i)
            if v is not None:
                return v
        if base == "%laneid":
            return self.linear_tid() & 31
        if base in ("%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"):
            lane = self.linear_tid() & 31
            one = z3.BitVecVal(1, 32)
            eq = one << lane
            return {"%lanemask_eq": eq, "%lanemask_lt": eq - 1, "%lanemask_le": (eq - 1) | eq,
                    "%lanemask_gt": ~((eq - 1) | eq), "%lanemask_ge": ~(eq - 1)}[base]
        return None  # any other special register reads as an approximate value


def _dims(d) -> str:
    return "x".join(str(v) for v in d)


def _grid_dims_read(module, kernel) -> set:
    """The grid dimensions the kernel, or a function it may call, reads (%ctaid, %nctaid)."""
    used = set()
    for i in reachable_instructions(module, kernel):
        for o in i.operands:
            for r in operand_regs(o):
                base, _, d = r.name.partition(".")
                if base in ("%ctaid", "%nctaid"):
                    used.add(d or "x")
    return used


def _value_bits(v, ty: str) -> int:
    w = SCALAR_BITS[ty]
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) or ty.startswith("f") or ty.startswith("bf"):
        if ty in ("f32", "f64", "f16", "bf16"):
            return float_to_bits(ty, float(v))
    return int(v) & ((1 << w) - 1)

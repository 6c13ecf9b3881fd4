"""Symbolic execution of one thread's structured kernel body: memory accesses, barrier
instances and loop summaries, as z3 bit-vector terms.

Owns: what one symbolic thread does. The body is executed once, in program order, over
z3 terms (``kverify.semantics.values`` gives the integer instruction semantics in the Z3 domain);
``If`` explores both arms under path conditions and merges registers with ``ite``; a
``Loop`` is executed once with a symbolic iteration counter ``k``: its induction variables
(``Loop.ivs``) take the value ``init + k*step``, every other register the loop writes is
havocked, and the barrier count is ``epoch_at_entry + c*k`` with ``c`` the barriers per
iteration. Induction variables and trip counts from the front end are re-validated here by
SMT (induction: at every ``continue`` the register is ``head + step`` and ``k + 1 < trip``);
what fails validation is havocked instead, so a wrong summary never makes a proof.

Every access records: the instruction, space (``shared``/``global``), read/write/update,
whether it is morally strong (atomics; volatile/relaxed/acquire/release with a scope that
covers both threads), the byte address and width, the path condition, the *epoch* (number
of ``bar.sync 0`` executed before it, the barrier interval) and the enclosing loops'
iteration counters.

Values the encoding cannot know exactly (floating-point results, values loaded from memory
the kernel also writes, havocked loop registers, results of collectives and unsupported
instructions) are fresh symbols marked *approximate*; a race that depends on them is
reported as ``unknown``, never as a violation. Symbols that belong to the thread are
created in pairs (thread A and thread B) so that thread B's terms are thread A's with the
pairs substituted.

PTX ISA (9.0): §9.7.13.1 bar/barrier; ld, st (§9.7.9), atom, red, elect.sync (§9.7.13);
§10 special registers.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from kverify.semantics.ir.nodes import (Addr, Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg,
                                PairOp, Reg, Sym, VecOp)
from kverify.semantics.ir.optable import OPS, space_of
from kverify.semantics.ir.symint import SymInt
from kverify.semantics.ir.errors import Unsupported  # noqa: F401  (re-exported)
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.values import FAMILIES, Z3Domain, evaluate, is_float

#: instruction families outside the classic (bar.sync-only) race model: their ordering is
#: the async-proxy / mbarrier / group-wait semantics this checker does not encode yet.
ASYNC_PREFIXES = ("cp.async", "cp.reduce.async", "mbarrier", "wgmma", "tcgen05", "st.async",
                  "red.async", "fence.proxy.async", "tensormap", "setmaxnreg")
#: memory-accessing collectives whose per-lane addresses are not modelled
UNMODELLED_MEMORY = ("ldmatrix", "stmatrix", "prefetch.tensormap", "discard", "multimem")
#: families without a memory or synchronization effect whose results are unconstrained
OPAQUE_VALUE = ("shfl", "vote", "match", "redux", "activemask", "mapa", "getctarank",
                "createpolicy", "isspacep", "bfind", "fns", "dp4a", "dp2a", "szext", "testp",
                "mbarrier.pending_count", "movmatrix", "mma", "cvt.pack", "nanosleep")
NOP = ("membar", "fence", "prefetch", "prefetchu", "applypriority", "griddepcontrol",
       "nanosleep", "pmevent", "brkpt", "bar.warp.sync", "barrier.cluster", "cp.async.bulk.prefetch",
       "cp.async.bulk.prefetch.tensor", "fence.mbarrier_init", "fence.proxy.alias")

#: synchronization the barrier-interval model does not count, and what it may order
_UNMODELLED_ORDERING = {
    "membar": "a memory fence (with flag synchronization)",
    "fence": "a memory fence (with flag synchronization)",
    "bar.warp.sync": "__syncwarp",
    "barrier.cluster": "a cluster barrier",
    "griddepcontrol": None,
}

_D = Z3Domain()
TRUE = z3.BoolVal(True)
FALSE = z3.BoolVal(False)
K_LIMIT = 1 << 31  # iteration counters of loops without a validated trip count


def is_false(e) -> bool:
    return z3.is_false(e)


def is_true(e) -> bool:
    return z3.is_true(e)


def _unique(xs):
    seen, out = set(), []
    for x in xs:
        if x.get_id() not in seen:
            seen.add(x.get_id())
            out.append(x)
    return out


def mk_and(*xs):
    xs = _unique([x for x in xs if not is_true(x)])
    if any(is_false(x) for x in xs):
        return FALSE
    if not xs:
        return TRUE
    return xs[0] if len(xs) == 1 else z3.And(*xs)


def mk_or(*xs):
    xs = _unique([x for x in xs if not is_false(x)])
    if any(is_true(x) for x in xs):
        return TRUE
    if not xs:
        return FALSE
    return xs[0] if len(xs) == 1 else z3.Or(*xs)


def mk_not(x):
    if is_true(x):
        return FALSE
    if is_false(x):
        return TRUE
    return z3.Not(x)


def mk_ite(c, a, b):
    if is_true(c) or a.eq(b):
        return a
    if is_false(c):
        return b
    return z3.If(c, a, b)


def fit(term, width: int):
    """Adapt a value to ``width`` bits (predicates become 0/1; wider values are truncated,
    narrower ones zero-extended)."""
    if width == 1 and z3.is_bool(term):
        return term
    if z3.is_bool(term):
        term = z3.If(term, z3.BitVecVal(1, 32), z3.BitVecVal(0, 32))
    if width == 1:
        return term != 0
    w = term.size()
    if w == width:
        return term
    if w > width:
        return z3.Extract(width - 1, 0, term)
    return z3.ZeroExt(width - w, term)


class Substitution:
    """Simultaneous substitution (e.g. of thread A's symbols by thread B's) with the
    argument arrays built once: ``z3.substitute`` re-checks every pair on every call."""

    def __init__(self, pairs):
        self.n = len(pairs)
        self.keep = list(pairs)
        self.frm = (z3.Ast * max(1, self.n))()
        self.to = (z3.Ast * max(1, self.n))()
        for i, (a, b) in enumerate(pairs):
            self.frm[i] = a.as_ast()
            self.to[i] = b.as_ast()

    def __call__(self, e):
        if not self.n:
            return e
        r = z3.Z3_substitute(e.ctx_ref(), e.as_ast(), self.n, self.frm, self.to)
        return z3.z3._to_expr_ref(r, e.ctx)


# --------------------------------------------------------------------------- records
@dataclass
class LoopInfo:
    """One loop of the kernel as the executor summarized it."""

    loop: Loop
    k: object  # thread A's iteration counter (BV64)
    trip: object | None  # validated trip count (BV64) or None
    exact: bool  # every k in [0, trip) is reached (k is not an over-approximation)
    barriers_per_iteration: int = 0
    dropped_ivs: tuple = ()
    cont_pc: object = None  # thread A: iteration k goes on to iteration k + 1

    @property
    def name(self) -> str:
        ln = self.loop.loc.line or self.loop.loc.ptx_line
        return f"{self.loop.label} (line {ln})" if ln else self.loop.label


@dataclass
class Access:
    seq: int
    instr: Instr
    space: str  # shared | global
    mode: str  # read | write | update
    strong: bool
    atomic: bool
    region: str | None  # "shared", "param:<name>", "var:<name>", None (not expressible)
    addr: object  # BV32 (shared) / BV64 (global)
    width: int
    pc: object
    epoch: object  # BV64
    loops: tuple  # ((LoopInfo, k), ...) outermost first

    @property
    def writes(self) -> bool:
        return self.mode != "read"


@dataclass
class SyncSite:
    """A barrier instance, or a decision (continue / leave) of a loop that contains one;
    their conditions must be uniform across the CTA for barrier intervals to mean
    anything."""

    kind: str  # barrier | loop-continue | loop-exit
    instr: Instr | None
    loc: object
    pc: object
    exited: object
    head_pc: object  # barrier: TRUE; loop decisions: pc of the loop head of that iteration
    loops: tuple


@dataclass
class State:
    pc: object
    regs: dict
    epoch: object
    exited: object

    def dead(self) -> "State":
        return State(FALSE, self.regs, self.epoch, self.exited)


# --------------------------------------------------------------------------- environment
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
        self.shared_constraints: list = []
        self.assumptions: list = []  # human-readable
        self.uf_decls: dict = {}
        # --- dims
        if launch is not None:
            self.ntid = tuple(z3.BitVecVal(v, 32) for v in launch.block)
            self.nctaid = tuple(z3.BitVecVal(v, 32) for v in launch.grid)
            self.block = tuple(launch.block)
            self.grid = tuple(launch.grid)
        else:
            bd = kernel.block_dim
            if bd is not None:
                self.ntid = tuple(z3.BitVecVal(v, 32) for v in bd)
                self.block = tuple(bd)
                src = ".reqntid" if kernel.directive("reqntid") else ".maxntid (__launch_bounds__)"
                self.assumptions.append(f"block {bd[0]}x{bd[1]}x{bd[2]} from {src}")
            else:
                self.ntid = tuple(z3.BitVec(f"ntid.{d}", 32) for d in "xyz")
                self.block = None
                lim = (1024, 1024, 64)
                for v, m in zip(self.ntid, lim):
                    self.shared_constraints.append((z3.And(z3.UGE(v, 1), z3.ULE(v, m)), _keys(v)))
                x, y, zz = self.ntid
                self.shared_constraints.append((z3.ULE(x * y * zz, 1024), _keys(x, y, zz)))
                self.assumptions.append("block size symbolic (no launch spec, no .reqntid)")
            # grid symbolic; a dimension the kernel never reads is 1 (launching more CTAs
            # along it only repeats the work: a launch error, not a kernel property), and
            # the global thread index along each dimension fits in a signed 32-bit int
            used = _grid_dims_read(kernel)
            self.nctaid = tuple(z3.BitVec(f"nctaid.{d}", 32) if d in used else z3.BitVecVal(1, 32)
                                for d in "xyz")
            self.grid = None
            for d, v, n, m in zip("xyz", self.nctaid, self.ntid, ((1 << 31) - 1, 65535, 65535)):
                if d not in used:
                    continue
                fits = z3.ULE(z3.ZeroExt(32, v) * z3.ZeroExt(32, n), (1 << 31) - 1)
                self.shared_constraints.append((z3.And(z3.UGE(v, 1), z3.ULE(v, m), fits), _keys(v)))
            self.assumptions.append("grid symbolic (no launch spec): "
                                    + (", ".join(f"gridDim.{d}" for d in "xyz" if d in used)
                                       or "no dimension")
                                    + " read by the kernel, the others 1; gridDim*blockDim < 2^31 "
                                    "along each dimension")
        self.tid = tuple(self.fresh(f"tid.{d}", 32) for d in "xyz")
        self.ctaid = tuple(self.fresh(f"ctaid.{d}", 32) for d in "xyz")
        for t, n in zip(self.tid, self.ntid):
            self.constraints_a.append((z3.ULT(t, n), _keys(t)))
        for c, n in zip(self.ctaid, self.nctaid):
            self.constraints_a.append((z3.ULT(c, n), _keys(c)))
        # --- params
        self.params: dict = {}  # PTX name -> (term, Param)
        self.param_values: dict = {}
        for i, p in enumerate(kernel.params):
            w = p.type.bits
            if p.array:
                continue
            v = self._launch_arg(i) if launch is not None else None
            if v is not None:
                bits = _value_bits(v, p.type.name)
                self.params[p.name] = (z3.BitVecVal(bits, w), p)
                self.param_values[p.source_name or p.name] = v
            else:
                self.params[p.name] = (z3.BitVec(p.name, w), p)
        # --- shared layout (static variables in declaration order, then dynamic)
        self.shared_vars: list = []  # (name, base, size)
        self.shared_base: dict = {}
        off = 0
        decls = [v for v in tuple(module.vars) + tuple(kernel.vars) if v.space in ("shared", "shared::cta")]
        for v in sorted(decls, key=lambda d: d.extern):
            al = v.align or max(1, v.type.bits // 8)
            if v.extern:
                al = max(al, 16)
            off = (off + al - 1) // al * al
            size = v.size
            if v.extern:
                size = launch.dynamic_smem if launch is not None and launch.dynamic_smem else None
            self.shared_vars.append((v.name, off, size))
            self.shared_base[v.name] = off
            off += v.size if not v.extern else 0
        self.global_vars = {v.name for v in tuple(module.vars) + tuple(kernel.vars)
                            if v.space in ("global", "const")}

    def _launch_arg(self, i):
        p = self.kernel.params[i]
        args = self.launch.args or {}
        for key in (p.source_name, p.name, str(i), i):
            if key is not None and key in args:
                return args[key]
        return None

    def fresh(self, name: str, width: int, approx: bool = False):
        """A per-thread symbol: returns thread A's and registers the (A, B) pair."""
        if width == 1:
            a, b = z3.Bool(f"{name}!A"), z3.Bool(f"{name}!B")
        else:
            a, b = z3.BitVec(f"{name}!A", width), z3.BitVec(f"{name}!B", width)
        self.pairs.append((a, b))
        if approx:
            self.approx.add(str(a))
            self.approx.add(str(b))
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


def _grid_dims_read(kernel) -> set:
    from kverify.semantics.ir.nodes import operand_regs
    from kverify.semantics.ir.visit import instructions

    used = set()
    for i in instructions(kernel.body):
        for o in i.operands:
            for r in operand_regs(o):
                base, _, d = r.name.partition(".")
                if base in ("%ctaid", "%nctaid"):
                    used.add(d or "x")
    return used


def _keys(*consts) -> frozenset:
    return frozenset(c.decl().name() for c in consts)


def _value_bits(v, ty: str) -> int:
    from kverify.semantics.values import float_to_bits

    w = SCALAR_BITS[ty]
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) or ty.startswith("f") or ty.startswith("bf"):
        if ty in ("f32", "f64", "f16", "bf16"):
            return float_to_bits(ty, float(v))
    return int(v) & ((1 << w) - 1)


# --------------------------------------------------------------------------- executor
class Executor:
    """Runs thread A over the kernel body; see the module docstring."""

    def __init__(self, env: Env, check):
        self.env = env
        self.check = check  # (formula) -> "sat" | "unsat" | "unknown" under thread-A constraints
        self.kernel = env.kernel
        self.accesses: list = []
        self.syncs: list = []
        self.loops: list = []
        self.reasons = {"shared": [], "global": []}
        self.notes: list = []
        # synchronization that may order accesses but is not counted: a race found while
        # it is present is reported as unknown, not as a violation
        self.unmodelled_sync: list = []
        self.pending: dict = {}
        self.loop_stack: list = []  # (LoopInfo, k)
        self.loads: list = []  # (tag, value, region, width, seq) of global loads
        self.written_regions: set = set()
        self.unknown_region_write = False
        self.seq = {}
        self.widths = {}
        self.barrier_count = 0
        self.elect_sites = 0
        self._closed_forms: dict = {}
        for d in self.kernel.regs:
            w = d.type.bits if hasattr(d.type, "bits") else 32
            if d.count is None:
                self.widths[d.name] = w
            else:
                for i in range(d.count):
                    self.widths[f"{d.name}{i}"] = w
        self.quiet: dict = {}
        self._annotate(self.kernel.body, ("kernel",), True, {})
        n = 0
        from kverify.semantics.ir.visit import walk

        for s, _ in walk(self.kernel.body):
            if isinstance(s, Instr):
                self.seq[id(s)] = n
                n += 1

    # ------------------------------------------------------------------ helpers
    def reason(self, msg: str, space: str | None = None, ordering: bool = False):
        """Something the encoding does not cover: the obligation (of ``space``, or both)
        cannot be proved. With ``ordering``, it may also order accesses (or changes the
        barrier count), so a race found elsewhere cannot be claimed either."""
        for sp in ((space,) if space else ("shared", "global")):
            if msg not in self.reasons[sp]:
                self.reasons[sp].append(msg)
        if ordering:
            self.unmodelled(msg)

    def where(self, node) -> str:
        loc = node.loc
        if loc.line:
            return f"{loc.file or '?'}:{loc.line}"
        return f"ptx line {loc.ptx_line}"

    def approx(self, name: str, width: int):
        return self.env.fresh(name, width, approx=True)

    def read(self, st: State, op, width: int | None = None):
        """Value of an operand as (term, region)."""
        if isinstance(op, Reg):
            v = self._reg(st, op.name, width)
            if width is not None:
                return fit(v[0], width), v[1]
            return v
        if isinstance(op, Neg):
            t, _ = self._reg(st, op.reg.name, 1)
            return mk_not(fit(t, 1)), None
        if isinstance(op, Imm):
            w = width or 32
            if w == 1:
                return z3.BoolVal(bool(op.value)), None
            return z3.BitVecVal(op.value & ((1 << w) - 1), w), None
        if isinstance(op, FImm):
            w = width or op.width
            return fit(z3.BitVecVal(op.bits, op.width), w), None
        if isinstance(op, Sym):
            w = width or 64
            if op.name in self.env.shared_base:
                return z3.BitVecVal(self.env.shared_base[op.name] + op.offset, w), "shared"
            if op.name in self.env.params:
                return self.approx(f"paramaddr.{op.name}", w), None
            if op.name in self.env.global_vars:
                base = z3.BitVec(f"gvar.{op.name}", 64)
                return fit(base + op.offset, w), f"var:{op.name}"
            return self.approx(f"sym.{op.name}", w), None
        if isinstance(op, VecOp):
            return None, None
        return self.approx("opnd", width or 32), None

    def _reg(self, st: State, name: str, width):
        base = name.split(".")[0]
        if base.startswith("%") and name not in st.regs and name not in self.widths:
            v = self.special(name)
            if v is not None:
                return v, None
        v = st.regs.get(name)
        if v is None:
            w = width or self.widths.get(name, 32)
            v = (self.approx(f"undef.{name}", w), None)
            st.regs[name] = v
        return v

    def special(self, name: str):
        env = self.env
        parts = name.split(".")
        base, dim = parts[0], (parts[1] if len(parts) > 1 else "x")
        i = "xyz".find(dim) if dim in ("x", "y", "z") else -1
        if base == "%tid" and i >= 0:
            return env.tid[i]
        if base == "%ntid" and i >= 0:
            return env.ntid[i]
        if base == "%ctaid" and i >= 0:
            return env.ctaid[i]
        if base == "%nctaid" and i >= 0:
            return env.nctaid[i]
        if base == "%laneid":
            return env.linear_tid() & 31
        if base in ("%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"):
            lane = env.linear_tid() & 31
            one = z3.BitVecVal(1, 32)
            eq = one << lane
            return {"%lanemask_eq": eq, "%lanemask_lt": eq - 1, "%lanemask_le": (eq - 1) | eq,
                    "%lanemask_gt": ~((eq - 1) | eq), "%lanemask_ge": ~(eq - 1)}[base]
        return None  # any other special register reads as an approximate value

    def write(self, st: State, reg: str, val, guard):
        term, region = val
        if not is_true(guard):
            old = st.regs.get(reg)
            if old is None:
                w = 1 if z3.is_bool(term) else term.size()
                old = (self.approx(f"undef.{reg}", w), None)
            if z3.is_bool(term) != z3.is_bool(old[0]):
                old = (fit(old[0], 1 if z3.is_bool(term) else term.size()), old[1])
            elif not z3.is_bool(term) and old[0].size() != term.size():
                old = (fit(old[0], term.size()), old[1])
            term = mk_ite(guard, term, old[0])
            region = region if region == old[1] else "?"
        st.regs[reg] = (term, region)

    @staticmethod
    def dests(instr: Instr):
        """Registers the instruction writes: its op-table ``def`` slots (the first operand
        of an instruction the table does not know; the destination of ``bar.red``)."""
        row = OPS.get(instr.op)
        if row is None or not instr.supported:
            slots = (0,)
        elif instr.op in ("bar", "barrier") and "red" in instr.mods:
            slots = (0,)
        else:
            slots = tuple(i for i, sl in enumerate(row.operands) if sl.access == "def")
        out = []
        for i in slots:
            d = instr.operands[i] if i < len(instr.operands) else None
            if isinstance(d, Reg):
                out.append(d.name)
            elif isinstance(d, VecOp):
                out.extend(e.name for e in d.elems if isinstance(e, Reg))
            elif isinstance(d, PairOp):
                out.extend(e.name for e in (d.first, d.second) if isinstance(e, Reg))
        return out

    def havoc_dests(self, st: State, instr: Instr, guard, tag="op"):
        for r in self.dests(instr):
            w = self.widths.get(r, 32)
            self.write(st, r, (self.approx(f"{tag}.{r}", w), None), guard)

    # ------------------------------------------------------------------ statements
    def run(self):
        st = State(TRUE, {}, z3.BitVecVal(0, 64), FALSE)
        st = self.stmts(self.kernel.body, st, ("kernel",))
        self._resolve_loads()
        return st

    def _resolve_loads(self):
        """Global loads from a buffer the kernel never writes read an input: one value per
        address, shared by all threads (the tag becomes 0). Loads from a buffer it writes
        become fresh approximate values (the memory changes while the kernel runs)."""
        pairs = []
        for tag, app, region, w, seq in self.loads:
            if region in self.written_regions or self.unknown_region_write:
                pairs.append((app, self.approx(f"mem{seq}.{region}", w)))
            else:
                pairs.append((tag, z3.BitVecVal(0, 8)))
        if not pairs:
            return

        sub = Substitution(pairs)

        for a in self.accesses:
            a.addr, a.pc, a.epoch = sub(a.addr), sub(a.pc), sub(a.epoch)
        for y in self.syncs:
            y.pc, y.exited, y.head_pc = sub(y.pc), sub(y.exited), sub(y.head_pc)
        for info in self.loops:
            if info.cont_pc is not None:
                info.cont_pc = sub(info.cont_pc)
        self.env.constraints_a[:] = [(sub(c), keys) for c, keys in self.env.constraints_a]

    # ------------------------------------------------------------------ quiet tails
    def _annotate(self, stmts, key, after, labels):
        """``self.quiet[key][i]``: from statement i of this list on, a thread executes no
        barrier and no shared or global access until it exits (``after``: the same for what
        follows the list; ``labels``: the same for the targets of break / continue). Such a
        thread can take part in no race and in no barrier: it is as good as exited, which
        is what lets ``if (tid >= n) return;`` precede a ``__syncthreads()``."""
        n = len(stmts)
        q = [False] * (n + 1)
        q[n] = after
        for i in range(n - 1, -1, -1):
            s = stmts[i]
            nxt = q[i + 1]
            if isinstance(s, Instr):
                if s.op in ("ret", "exit", "trap") and s.guard is None:
                    ok = True
                else:
                    ok = nxt and self._instr_quiet(s)
            elif isinstance(s, If):
                t = self._annotate(s.then, (id(s), "then"), nxt, labels)
                e = self._annotate(s.orelse, (id(s), "else"), nxt, labels)
                ok = t and e
            elif isinstance(s, Block):
                ok = self._annotate(s.body, (id(s), "body"), nxt, {**labels, s.label: nxt})
            elif isinstance(s, Loop):
                guess = True
                while True:  # the body start is quiet if it is, assuming so at `continue`
                    ok = self._annotate(s.body, (id(s), "body"), nxt, {**labels, s.label: guess})
                    if ok == guess:
                        break
                    guess = ok
            elif isinstance(s, (Break, Continue)):
                ok = labels.get(s.label, False)
            else:
                ok = False
            q[i] = ok
        self.quiet[key] = q
        return q[0]

    @staticmethod
    def _instr_quiet(ins: Instr) -> bool:
        op = ins.op
        if not ins.supported or op in ("bar", "barrier", "bar.warp.sync", "barrier.cluster", "call"):
            return False
        if op.startswith(ASYNC_PREFIXES) or op in UNMODELLED_MEMORY:
            return False
        if op in ("ld", "ldu", "st", "atom", "red"):
            return space_of(ins) in ("param", "param::entry", "param::func", "local", "const")
        return True

    @staticmethod
    def _quiet_exit(st: State) -> State:
        return State(FALSE, st.regs, st.epoch, mk_or(st.exited, st.pc))

    def stmts(self, stmts, st: State, key) -> State:
        q = self.quiet.get(key)
        for i, s in enumerate(stmts):
            if is_false(st.pc):
                # nothing below executes on this path (but nested loops' sites need no record)
                break
            if q is not None and q[i]:
                return self._quiet_exit(st)
            if isinstance(s, Instr):
                st = self.instr(s, st)
            elif isinstance(s, If):
                st = self.if_(s, st)
            elif isinstance(s, Loop):
                st = self.loop(s, st)
            elif isinstance(s, Block):
                key = ("break", s.label)
                mark = len(self.pending.get(key, []))
                end = self.stmts(s.body, st, (id(s), "body"))
                outs = self.pending.get(key, [])[mark:]
                if key in self.pending:
                    del self.pending[key][mark:]
                st = self.merge([end] + outs)
            elif isinstance(s, Break):
                self.pending.setdefault(("break", s.label), []).append(st)
                st = st.dead()
            elif isinstance(s, Continue):
                self.pending.setdefault(("cont", s.label), []).append(st)
                st = st.dead()
        if q is not None and q[len(stmts)] and not is_false(st.pc):
            return self._quiet_exit(st)
        return st

    def cond(self, st: State, reg: Reg, negated: bool):
        t, _ = self._reg(st, reg.name, 1)
        c = fit(t, 1)
        return mk_not(c) if negated else c

    def if_(self, s: If, st: State) -> State:
        c = self.cond(st, s.cond, s.negated)
        t0, e0 = mk_and(st.pc, c), mk_and(st.pc, mk_not(c))
        # a thread that takes an arm that is quiet until exit is as good as exited from the
        # moment it branches -- also as seen from the other arm (``if (tid >= n) return;``
        # before a barrier): the other arm's threads see it as exited
        tq = self.quiet[(id(s), "then")][0]
        eq = self.quiet[(id(s), "else")][0]
        t = State(t0, dict(st.regs), st.epoch, mk_or(st.exited, e0) if eq else st.exited)
        e = State(e0, dict(st.regs), st.epoch, mk_or(st.exited, t0) if tq else st.exited)
        t = self.stmts(s.then, t, (id(s), "then")) if not is_false(t.pc) else t
        e = self.stmts(s.orelse, e, (id(s), "else")) if not is_false(e.pc) else e
        if is_false(t.pc) or is_false(e.pc):
            return self.merge([t, e])
        # both arms fall through: registers are selected by the condition itself, and when
        # neither arm left early the path condition is the one before the branch
        pc = st.pc if (t.pc.eq(t0) and e.pc.eq(e0)) else mk_or(t.pc, e.pc)
        return self.merge([t, e], pc=pc, select=c)

    def merge(self, states, pc=None, select=None) -> State:
        """Join states; ``select`` (two states) is a condition true on the first one's
        paths and false on the second's, used instead of the path conditions."""
        exited = mk_or(*[s.exited for s in states])
        live = [s for s in states if not is_false(s.pc)]
        if not live:
            base = states[0]
            return State(FALSE, base.regs, base.epoch, exited)
        if len(live) == 1:
            s = live[0]
            return State(s.pc, s.regs, s.epoch, exited)
        if pc is None:
            pc = mk_or(*[s.pc for s in live])
        sel = [select] if select is not None and len(live) == 2 else [s.pc for s in live[:-1]]
        regs = {}
        names = set()
        for s in live:
            names.update(s.regs)
        for n in names:
            vals = [(p, s.regs.get(n)) for p, s in zip(sel + [TRUE], live)]
            have = [(p, v) for p, v in vals if v is not None]
            term, region = have[-1][1]
            for p, v in reversed(have[:-1]):
                t2 = v[0]
                if z3.is_bool(t2) != z3.is_bool(term):
                    t2 = fit(t2, 1 if z3.is_bool(term) else term.size())
                elif not z3.is_bool(term) and t2.size() != term.size():
                    t2 = fit(t2, term.size())
                term = mk_ite(p, t2, term)
                if v[1] != region:
                    region = "?"
            regs[n] = (term, region)
        epoch = live[-1].epoch
        for p, s in reversed(list(zip(sel, live[:-1]))):
            epoch = mk_ite(p, s.epoch, epoch)
        return State(pc, regs, epoch, exited)

    # ------------------------------------------------------------------ loops
    def loop(self, lp: Loop, st: State) -> State:
        written = set()
        from kverify.semantics.ir.visit import walk

        for s, _ in walk(lp.body):
            if isinstance(s, Instr):
                written.update(self.dests(s))
        ivs = {iv.reg.name: iv for iv in lp.ivs if iv.reg.name in written}
        # extension point: closed forms of further loop-carried registers (validated like
        # induction variables below); none by default
        forms = dict(self.loop_closed_forms(lp, st, written, ivs) or {})
        self._closed_forms[id(lp)] = forms
        trip_modes = ["sext", "zext", None] if lp.trip_count is not None else [None]
        dropped: list = []
        region_unknown: set = set()
        while True:
            mode = trip_modes[0]
            res = self._loop_attempt(lp, st, ivs, mode, written, region_unknown)
            if res[0] == "ok":
                info, out = res[1], res[2]
                info.dropped_ivs = tuple(dropped)
                return out
            _, bad_ivs, bad_trip, bad_regions = res
            region_unknown |= set(bad_regions)
            for r in bad_ivs:
                ivs.pop(r, None)
                forms.pop(r, None)
                dropped.append(r)
            if bad_trip:
                trip_modes.pop(0)

    def _trip_term(self, lp: Loop, regs0: dict, mode):
        if mode is None or lp.trip_count is None:
            return None
        try:
            return self.symint(lp.trip_count, 64, regs0, signed=(mode == "sext"))
        except Unsupported:
            return None

    def symint(self, s: SymInt, width: int, regs0: dict, signed: bool = True):
        """A ``SymInt`` (over parameters, special registers and registers at loop entry)
        as a ``width``-bit term."""
        env = self.env

        def ext(t):
            if z3.is_bool(t):
                t = z3.If(t, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            w = t.size()
            if w == width:
                return t
            if w > width:
                return z3.Extract(width - 1, 0, t)
            return (z3.SignExt if signed else z3.ZeroExt)(width - w, t)

        def atom(a):
            if isinstance(a, str):
                if a in env.params:
                    return ext(env.params[a][0])
                for p in self.kernel.params:
                    if p.source_name == a and p.name in env.params:
                        return ext(env.params[p.name][0])
                if a.startswith("%"):
                    if a in regs0:
                        return ext(regs0[a][0])
                    v = self.special(a)
                    if v is not None:
                        return z3.ZeroExt(width - 32, v) if width > 32 else fit(v, width)
                raise Unsupported(f"symbol {a} in a loop summary")
            args = [self.symint(x, width, regs0, signed) for x in a.args]
            x, y = args
            if a.op == "floordiv":
                q = x / y
                return z3.If(z3.And(x % y != 0, (x < 0) != (y < 0)), q - 1, q)
            if a.op == "mod":
                q = x / y
                q = z3.If(z3.And(x % y != 0, (x < 0) != (y < 0)), q - 1, q)
                return x - q * y
            if a.op == "min":
                return z3.If(x < y, x, y)
            if a.op == "max":
                return z3.If(x > y, x, y)
            raise Unsupported(f"{a.op} in a loop summary")

        out = z3.BitVecVal(0, width)
        for mono, c in s.terms:
            t = z3.BitVecVal(c & ((1 << width) - 1), width)
            for a in mono:
                t = t * atom(a)
            out = out + t
        return z3.simplify(out)

    def _loop_attempt(self, lp: Loop, st: State, ivs: dict, mode, written, region_unknown):
        n = len(self.loops)
        k = self.env.fresh(f"k{n}.{lp.label}", 64)
        regs0 = st.regs
        trip = self._trip_term(lp, regs0, mode)
        if mode is not None and trip is None:
            return ("retry", [], True, [])
        # --- loop head at iteration k
        if trip is not None:
            rng = mk_and(z3.ULT(k, z3.BitVecVal(K_LIMIT, 64)), k < trip)
        else:
            rng = z3.ULT(k, z3.BitVecVal(K_LIMIT, 64))
        head_pc = mk_and(st.pc, rng)
        regs = dict(regs0)
        steps = {}
        first = k == 0
        forms = self._closed_forms.get(id(lp), {})
        for r in sorted(written):
            old = regs0.get(r)
            if r in forms and r not in ivs and old is not None and not z3.is_bool(old[0]):
                regs[r] = (forms[r](k), old[1])
                continue
            if r in ivs and old is not None and not z3.is_bool(old[0]):
                w = old[0].size()
                try:
                    step = self.symint(ivs[r].step, w, regs0)
                except Unsupported:
                    step = None
                if step is not None:
                    steps[r] = step
                    kw = fit(k, w)
                    regs[r] = (z3.simplify(old[0] + kw * step), old[1])
                    continue
            w = self.widths.get(r, 32)
            h = self.approx(f"h{n}.{r}", w)
            region = "?" if r in region_unknown else (old[1] if old is not None else None)
            if old is not None and (z3.is_bool(old[0]) == (w == 1)):
                regs[r] = (mk_ite(first, fit(old[0], w), h), region)
            else:
                regs[r] = (h, region)
        eh = z3.BitVec(f"E{n}.{lp.label}", 64)
        info = LoopInfo(lp, k, trip, False)
        self.loops.append(info)
        marks = {key: len(v) for key, v in self.pending.items()}
        amark, smark = len(self.accesses), len(self.syncs)
        cmark = len(self.env.constraints_a)
        bc_before = self.barrier_count
        self.loop_stack.append((info, k))
        head = State(head_pc, dict(regs), eh, st.exited)
        end = self.stmts(lp.body, head, (id(lp), "body"))
        self.loop_stack.pop()
        conts = self.pending.get(("cont", lp.label), [])[marks.get(("cont", lp.label), 0):]
        # restore pending lists for this label; collect breaks that leave the loop
        leaving = []
        for key, lst in self.pending.items():
            m = marks.get(key, 0)
            if key == ("cont", lp.label):
                del lst[m:]
            elif len(lst) > m:
                leaving.append((key, m))
        # --- validation (induction): IVs and the trip count
        checks = []
        for c in conts:
            for r, step in steps.items():
                now = c.regs.get(r)
                if now is None or z3.is_bool(now[0]):
                    checks.append(("iv", r, c.pc))
                else:
                    w = now[0].size()
                    checks.append(("iv", r, mk_and(c.pc, now[0] != fit(regs[r][0], w) + fit(step, w))))
            for r, f in forms.items():
                if r in ivs or r not in regs or r in steps:
                    continue
                now = c.regs.get(r)
                want = f(k + 1)
                if now is None or z3.is_bool(now[0]) or now[0].size() != want.size():
                    checks.append(("iv", r, c.pc))
                else:
                    checks.append(("iv", r, mk_and(c.pc, now[0] != want)))
            if trip is not None:
                checks.append(("trip", None, mk_and(c.pc, mk_not(k + 1 < trip))))
        if trip is not None:
            checks.append(("trip", None, mk_and(st.pc, mk_not(z3.BitVecVal(0, 64) < trip))))
        bad_ivs, bad_trip = [], False
        # pointer provenance assumed for the registers at the loop head must be kept
        bad_regions = sorted({r for c in conts for r in written
                              if r in regs and r in c.regs and c.regs[r][1] != regs[r][1]
                              and regs[r][1] != "?"})
        checks = [c for c in checks if not is_false(c[2])]
        if checks:
            res, model = self.check(mk_or(*[c[2] for c in checks]))
            if res != "unsat":
                for kind, r, f in checks:
                    if res == "unknown" or z3.is_true(model.eval(f, model_completion=True)):
                        if kind == "iv":
                            bad_ivs.append(r)
                        else:
                            bad_trip = True
        if bad_ivs or bad_trip or bad_regions:
            # undo this attempt
            del self.accesses[amark:]
            del self.syncs[smark:]
            del self.loops[n:]
            del self.env.constraints_a[cmark:]
            for key, lst in self.pending.items():
                del lst[marks.get(key, 0):]
            self.barrier_count = bc_before
            return ("retry", sorted(set(bad_ivs)), bad_trip, bad_regions)
        # --- barriers per iteration
        c_vals = set()
        for c in conts:
            d = z3.simplify(c.epoch - eh)
            c_vals.add(d.as_long() if z3.is_bv_value(d) else None)
        if not conts:
            cper = 0
            # the body never starts another iteration: only k = 0 runs
            for a in self.accesses[amark:]:
                a.pc = mk_and(a.pc, k == 0)
            end = State(mk_and(end.pc, k == 0), end.regs, end.epoch, end.exited)
        elif len(c_vals) == 1 and None not in c_vals:
            cper = c_vals.pop()
        else:
            cper = 0
            self.reason(f"the number of barriers per iteration of loop {info.name} is not constant; "
                        "barrier intervals in it are not summarized", None, ordering=True)
        info.barriers_per_iteration = cper
        info.cont_pc = mk_or(*[c.pc for c in conts])
        head_epoch = z3.simplify(st.epoch + z3.BitVecVal(cper, 64) * k)
        sub = [(eh, head_epoch)]
        for a in self.accesses[amark:]:
            a.epoch = z3.simplify(z3.substitute(a.epoch, *sub))
        if self.barrier_count != bc_before:
            # loop decisions must be uniform for the barrier intervals inside to line up
            for c in conts:
                self.syncs.append(SyncSite("loop-continue", None, lp.loc, c.pc, c.exited, head_pc,
                                           tuple(self.loop_stack) + ((info, k),)))
            for key, m in leaving:
                for s in self.pending[key][m:]:
                    self.syncs.append(SyncSite("loop-exit", None, lp.loc, s.pc, s.exited, head_pc,
                                               tuple(self.loop_stack) + ((info, k),)))
            self.syncs.append(SyncSite("loop-exit", None, lp.loc, end.pc, end.exited, head_pc,
                                       tuple(self.loop_stack) + ((info, k),)))
        for key, m in leaving:
            lst = self.pending[key]
            for i in range(m, len(lst)):
                s = lst[i]
                lst[i] = State(s.pc, s.regs, z3.simplify(z3.substitute(s.epoch, *sub)), s.exited)
        out = State(end.pc, end.regs, z3.simplify(z3.substitute(end.epoch, *sub)), end.exited)
        # --- exactness of k: every iteration below the trip count is reached
        if trip is not None:
            exits = [end.pc] + [s.pc for key, m in leaving for s in self.pending[key][m:]]
            body_exit = mk_and(mk_or(*exits, mk_and(out.exited, mk_not(st.exited))), k + 1 < trip)
            if is_false(body_exit):
                info.exact = True
            else:
                res, _ = self.check(body_exit)
                info.exact = res == "unsat"
        if not info.exact:
            self.env.approx.add(str(k))
            for a, b in self.env.pairs:
                if a.eq(k):
                    self.env.approx.add(str(b))
        # --- the state after the loop: the iteration it left in is a separate counter kx
        only_falloff = not leaving and out.exited.eq(st.exited)
        if only_falloff and info.exact:
            # every iteration below the trip count runs and only the last one falls off
            kx = z3.simplify(trip - 1)
        else:
            kx = self.env.fresh(f"kx{n}.{lp.label}", 64, approx=not info.exact)
        xs = [(k, kx)]
        regs_x = dict(out.regs)
        for r in written:
            if r in regs_x:
                t, rg = regs_x[r]
                regs_x[r] = (z3.substitute(t, *xs), rg)
        epoch_x = z3.simplify(z3.substitute(out.epoch, *xs))
        for key, m in leaving:
            lst = self.pending[key]
            for i in range(m, len(lst)):
                s = lst[i]
                lst[i] = State(z3.substitute(s.pc, *xs),
                               {r: ((z3.substitute(t, *xs), rg) if r in written else (t, rg))
                                for r, (t, rg) in s.regs.items()},
                               z3.substitute(s.epoch, *xs), z3.substitute(s.exited, *xs))
        if only_falloff and info.exact:
            out = State(st.pc, regs_x, epoch_x, st.exited)
        elif only_falloff:
            # only falling off the end leaves the loop: a thread that enters it leaves it
            # (loops are assumed to terminate) in the iteration kx where the exit is taken
            axiom = z3.Implies(st.pc, z3.substitute(end.pc, *xs))
            self.env.constraints_a.append((axiom, _keys(kx)))
            out = State(st.pc, regs_x, epoch_x, st.exited)
        else:
            out = State(z3.substitute(out.pc, *xs), regs_x, epoch_x, z3.substitute(out.exited, *xs))
        return ("ok", info, out)

    # ------------------------------------------------------------------ instructions
    def instr(self, ins: Instr, st: State) -> State:
        guard = TRUE
        if ins.guard is not None:
            guard = self.cond(st, ins.guard.reg, ins.guard.negated)
            if is_false(guard):
                return st
        op = ins.op
        if not ins.supported:
            self.reason(f"unsupported instruction {ins.opcode} at {self.where(ins)}", ordering=True)
            self.havoc_dests(st, ins, guard)
            return st
        if op.startswith(ASYNC_PREFIXES) or op in ("cp.async.bulk", "cp.async.bulk.tensor"):
            return self.async_instr(ins, st, guard)
        return self.plain_instr(ins, st, guard, op)

    def loop_closed_forms(self, lp: Loop, st: State, written, ivs) -> dict:
        """Extension point: ``{register: f}`` with ``f(k)`` the register's value at the
        head of iteration ``k``, for loop-carried registers that are not induction
        variables. Each form is validated by induction like an induction variable (and
        dropped when it fails); the race checker proposes none."""
        return {}

    def async_instr(self, ins: Instr, st: State, guard) -> State:
        """Asynchronous copies, mbarriers, wgmma: not modelled here (an extension point
        for checkers that record them)."""
        self.reason(f"{ins.opcode} at {self.where(ins)}: asynchronous copies, mbarriers and "
                    "wgmma are not modelled by the classic race check yet", ordering=True)
        self.havoc_dests(st, ins, guard)
        return st

    def plain_instr(self, ins: Instr, st: State, guard, op) -> State:
        if op in UNMODELLED_MEMORY:
            self.reason(f"{ins.opcode} at {self.where(ins)}: per-lane addresses of this collective "
                        "memory access are not modelled",
                        "shared" if "shared" in " ".join(ins.mods) else None)
            self.havoc_dests(st, ins, guard)
            return st
        if op in ("ret", "exit"):
            g = mk_and(st.pc, guard)
            return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, mk_or(st.exited, g))
        if op == "trap":
            return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, st.exited)
        if op in ("bar", "barrier"):
            return self.barrier(ins, st, guard)
        if op in ("ld", "ldu", "st", "atom", "red"):
            return self.memory(ins, st, guard)
        if op == "call":
            return self.call(ins, st, guard)
        if op == "elect":
            return self.elect(ins, st, guard)
        if op in NOP:
            why = _UNMODELLED_ORDERING.get(op)
            if why:
                self.unmodelled(f"{why} ({ins.opcode} at {self.where(ins)})")
            return st
        if op in OPAQUE_VALUE or op not in FAMILIES and op != "cvta":
            self.havoc_dests(st, ins, guard, op)
            return st
        return self.alu(ins, st, guard)

    def alu(self, ins: Instr, st: State, guard) -> State:
        op, mods = ins.op, ins.mods
        types = ins.types()
        ops = ins.operands
        if not types:
            self.havoc_dests(st, ins, guard, op)
            return st
        if op == "cvta":
            d = ops[0]
            ty = types[-1]
            w = SCALAR_BITS[ty]
            t, region = self.read(st, ops[1], w)
            if "to" not in mods and any(m in ("shared", "shared::cta") for m in mods):
                region = "shared" if region in ("shared", None) else region
            if isinstance(d, Reg):
                self.write(st, d.name, (t, region), guard)
            return st
        if op in ("cvt", "set", "slct"):
            if len(types) < 2:
                self.havoc_dests(st, ins, guard, op)
                return st
            ty = (types[0], types[1])
            fl = is_float(types[0]) or is_float(types[1])
            srcw = [SCALAR_BITS[types[1]]] * (len(ops) - 1)
            if op == "slct":
                srcw = [SCALAR_BITS[types[0]], SCALAR_BITS[types[0]], SCALAR_BITS[types[1]]]
            if op == "set" and len(ops) > 3:
                srcw[-1] = 1
        else:
            ty = types[-1]
            fl = is_float(ty)
            w = SCALAR_BITS[ty]
            srcw = [w] * (len(ops) - 1)
            if op in ("shl", "shr"):
                srcw[1:] = [32] * (len(srcw) - 1)
            elif op in ("mad",) and "wide" in mods:
                srcw[2:] = [2 * w]
            elif op in ("setp", "set") and len(srcw) > 2:
                srcw[2] = 1
            elif op == "selp":
                srcw[2] = 1
            elif op == "bfe":
                srcw[1:] = [32, 32]
            elif op == "bfi":
                srcw[2:] = [32, 32]
            elif op in ("prmt", "shf"):
                srcw[2:] = [32]
            elif op == "lop3":
                srcw = srcw[:-1]
            elif op in ("addc", "subc", "madc"):
                pass
            if ty == "pred":
                srcw = [1 if x == 1 or op not in ("selp",) else x for x in srcw]
        bitwise = op in ("mov", "selp") or (op in ("and", "or", "xor", "not") and not fl)
        if fl and not bitwise:
            self.havoc_dests(st, ins, guard, f"f.{op}")
            return st
        args, regions = [], []
        for o, w in zip(ops[1:], srcw):
            t, r = self.read(st, o, w)
            args.append(t)
            regions.append(r)
        if op == "lop3":
            imm = ops[4]
            if not isinstance(imm, Imm):
                self.havoc_dests(st, ins, guard, op)
                return st
            args.append(imm.value)
        if op in ("addc", "subc", "madc") or (op in ("add", "sub", "mad") and "cc" in mods):
            self.havoc_dests(st, ins, guard, op)
            st.regs.pop("%cc", None)
            return st
        if op == "mov" and len(args) == 1 and isinstance(ops[0], Reg):
            w = 1 if ty == "pred" else SCALAR_BITS[ty]
            self.write(st, ops[0].name, (fit(args[0], w), regions[0]), guard)
            return st
        if op == "mov" and isinstance(ops[1], VecOp):
            ew = SCALAR_BITS[ty] // len(ops[1].elems)
            args = [fit(self.read(st, e, ew)[0], ew) for e in ops[1].elems]
        if op == "mov" and isinstance(ops[0], VecOp):
            whole = args[0]
            n = len(ops[0].elems)
            ew = whole.size() // n
            for i, e in enumerate(ops[0].elems):
                if isinstance(e, Reg):
                    self.write(st, e.name, (z3.Extract(ew * (i + 1) - 1, ew * i, whole), None), guard)
            return st
        try:
            res = evaluate(_D, op, ty, mods, *args)
        except Exception:  # noqa: BLE001 - any form the semantics does not take
            self.havoc_dests(st, ins, guard, op)
            return st
        d = ops[0]
        region = self.region_of(op, mods, regions)
        if isinstance(res, tuple):
            if isinstance(d, PairOp):
                for x, v in zip((d.first, d.second), res):
                    if isinstance(x, Reg):
                        self.write(st, x.name, (v, None), guard)
            elif isinstance(d, Reg):
                self.write(st, d.name, (res[0], None), guard)
            return st
        if isinstance(d, Reg):
            self.write(st, d.name, (res, region), guard)
        else:
            self.havoc_dests(st, ins, guard, op)
        return st

    @staticmethod
    def region_of(op, mods, regions):
        """Pointer provenance: a pointer plus or minus an integer keeps its region."""
        rs = [r for r in regions if r is not None]
        if not rs:
            return None
        if op in ("mov", "cvt", "cvta"):
            return regions[0]
        if op == "add" and len(rs) == 1:
            return rs[0]
        if op == "sub" and regions[0] is not None and regions[1] is None:
            return regions[0]
        if op == "mad" and len(regions) >= 3 and regions[2] is not None and regions[:2] == [None, None]:
            return regions[2]
        if op == "selp" and regions[0] == regions[1]:
            return regions[0]
        return "?"

    # ------------------------------------------------------------------ memory
    def memory(self, ins: Instr, st: State, guard) -> State:
        op, mods = ins.op, ins.mods
        space = space_of(ins)
        ops = ins.operands
        addr_op = ops[0] if op in ("st", "red") else ops[1]
        types = ins.types()
        ty = types[-1] if types else "b32"
        vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
        width = max(1, SCALAR_BITS.get(ty, 32) // 8) * vec
        pc = mk_and(st.pc, guard)
        if space in ("param", "param::entry", "param::func"):
            if op in ("ld", "ldu"):
                self.load_param(ins, st, guard)
            return st
        if space in ("local", "const"):
            if op in ("ld", "ldu", "atom"):
                self.havoc_dests(st, ins, guard, f"{space}")
            return st
        if space == "shared::cluster":
            self.reason(f"{ins.opcode} at {self.where(ins)}: distributed shared memory is not modelled")
            self.havoc_dests(st, ins, guard, op)
            return st
        if not isinstance(addr_op, Addr):
            self.reason(f"{ins.opcode} at {self.where(ins)}: address operand not understood")
            self.havoc_dests(st, ins, guard, op)
            return st
        if addr_op.base is None:
            base_t, region = z3.BitVecVal(0, 64), None
        else:
            base_t, region = self.read(st, addr_op.base, None)
            if base_t is None or z3.is_bool(base_t):
                base_t, region = self.approx("addr", 64), None
        if space == "generic":
            if region == "shared":
                space = "shared"
            elif region is not None and (region.startswith("param:") or region.startswith("var:")):
                space = "global"
                self.note_once("generic addresses derived from a kernel pointer parameter are taken "
                               "to point to global memory")
            else:
                self.reason(f"{ins.opcode} at {self.where(ins)}: the state space of this generic "
                            "address cannot be determined")
                self.havoc_dests(st, ins, guard, op)
                if op != "ld":
                    self.unknown_region_write = True
                return st
        elif space in ("shared::cta",):
            space = "shared"
        elif space == "global":
            pass
        else:
            self.reason(f"{ins.opcode} at {self.where(ins)}: state space {space} not modelled")
            self.havoc_dests(st, ins, guard, op)
            return st
        if space == "shared":
            addr = fit(base_t, 32) + addr_op.offset
            region = "shared"
        else:
            addr = fit(base_t, 64) + addr_op.offset
            if region is None or region == "?" or region == "shared":
                self.reason(f"{ins.opcode} at {self.where(ins)}: the global buffer this address points "
                            "into cannot be determined", "global")
                region = None
        addr = z3.simplify(addr)
        atomic = op in ("atom", "red")
        # morally strong (PTX memory model §8): atomics, and ld/st with .volatile or with a
        # .relaxed/.acquire/.release semantics and a scope; the pair check compares scopes
        strong = atomic or "volatile" in mods or (
            bool({"relaxed", "acquire", "release", "acq_rel", "sc"} & set(mods))
            and any(m in ("cta", "cluster", "gpu", "sys") for m in mods))
        if {"acquire", "release", "acq_rel", "sc"} & set(mods):
            self.unmodelled(f"release/acquire synchronization ({ins.opcode} at {self.where(ins)})")
        mode = {"ld": "read", "ldu": "read", "st": "write", "atom": "update", "red": "update"}[op]
        if atomic and "cas" not in mods and "exch" not in mods and op == "atom":
            mode = "update"
        if mode != "read":
            if region is None:
                self.unknown_region_write = True
            else:
                self.written_regions.add(region)
        acc = Access(self.seq.get(id(ins), -1), ins, space, mode, strong, atomic, region, addr, width,
                     pc, st.epoch, tuple(self.loop_stack))
        self.accesses.append(acc)
        # the loaded value: global memory is a function of the address, the same for both
        # threads (an input) when the kernel never writes that buffer -- decided in run(),
        # until then each load is tagged; anything else is a fresh approximate value
        if op in ("ld", "ldu", "atom"):
            dests = self.dests(ins)
            for i, r in enumerate(dests):
                w = self.widths.get(r, 32)
                if op != "atom" and space == "global" and region is not None:
                    eb = width // max(1, len(dests))
                    tag = z3.BitVec(f"ldtag{len(self.loads)}", 8)
                    f = self.env.uf_mem(region, w)
                    v = f(addr + i * eb, tag)
                    self.loads.append((tag, v, region, w, acc.seq))
                else:
                    v = self.approx(f"mem{acc.seq}.{r}", w)
                self.write(st, r, (v, None), guard)
        return st

    def unmodelled(self, msg):
        if msg not in self.unmodelled_sync:
            self.unmodelled_sync.append(msg)

    def note_once(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)

    def load_param(self, ins: Instr, st: State, guard):
        a = ins.operands[1]
        d = ins.operands[0]
        name = a.base.name if isinstance(a, Addr) and isinstance(a.base, Sym) else None
        if isinstance(d, Reg) and name in self.env.params and a.offset == 0 and a.base.offset == 0:
            term, p = self.env.params[name]
            w = self.widths.get(d.name, term.size())
            region = f"param:{p.source_name or p.name}" if p.type.bits == 64 else None
            self.write(st, d.name, (fit(term, w), region), guard)
            return
        self.havoc_dests(st, ins, guard, "param")

    # ------------------------------------------------------------------ barriers
    def barrier(self, ins: Instr, st: State, guard) -> State:
        mods = set(ins.mods)
        ops = ins.operands
        kind = "arrive" if "arrive" in mods else ("red" if "red" in mods else "sync")
        if kind == "red":  # bar.red.op d, a{, b}, {!}c
            ops = ops[1:-1]
        bid = ops[0] if ops else Imm(0)
        if not isinstance(bid, Imm):
            self.reason(f"{ins.opcode} at {self.where(ins)}: barrier id in a register is not modelled",
                        ordering=True)
            self.havoc_dests(st, ins, guard, "bar")
            return st
        if bid.value != 0:
            self.unmodelled(f"named barrier {bid.value} ({ins.opcode} at {self.where(ins)})")
            if kind == "red":
                self.havoc_dests(st, ins, guard, "bar")
            return st
        count = ops[1] if len(ops) > 1 else None
        if kind == "arrive":
            self.reason(f"{ins.opcode} at {self.where(ins)}: bar.arrive on barrier 0 is not modelled",
                        ordering=True)
            return st
        if count is not None:
            full = None
            if self.env.block is not None:
                full = self.env.block[0] * self.env.block[1] * self.env.block[2]
            if not (isinstance(count, Imm) and full is not None and count.value == full):
                self.reason(f"{ins.opcode} at {self.where(ins)}: barrier 0 with a thread count that "
                            "is not the whole CTA is not modelled", ordering=True)
                return st
        if kind == "red":
            self.havoc_dests(st, ins, guard, "bar")
        pc = mk_and(st.pc, guard)
        self.syncs.append(SyncSite("barrier", ins, ins.loc, pc, st.exited, TRUE, tuple(self.loop_stack)))
        self.barrier_count += 1
        one = z3.BitVecVal(1, 64)
        epoch = z3.simplify(st.epoch + one) if is_true(guard) else mk_ite(guard, st.epoch + one, st.epoch)
        return State(st.pc, st.regs, epoch, st.exited)

    # ------------------------------------------------------------------ others
    def elect(self, ins: Instr, st: State, guard) -> State:
        """``elect.sync d|p, membermask``: one leader lane per warp and instance; modelled as
        an uninterpreted choice of the (CTA, warp, loop iterations) -- the same for every
        thread of the warp -- so ``p`` is true for exactly the leader's lane."""
        env = self.env
        self.elect_sites += 1
        ks = [k for _, k in self.loop_stack]
        f = env.uf(f"elect{self.elect_sites}", 4 + len(ks))
        warp = env.linear_tid() >> 5
        args = [z3.ZeroExt(32, c) for c in env.ctaid] + [z3.ZeroExt(32, warp)] + ks
        leader = f(*args)
        env.constraints_a.append((z3.ULT(leader, 32), frozenset((f.name(),))))
        lane = env.linear_tid() & 31
        d = ins.operands[0]
        first, second = (d.first, d.second) if isinstance(d, PairOp) else (d, None)
        if isinstance(first, Reg):
            self.write(st, first.name, (leader, None), guard)
        if isinstance(second, Reg):
            self.write(st, second.name, (leader == lane, None), guard)
        self.note_once("elect.sync: one leader lane per warp (which one is left open)")
        return st

    def call(self, ins: Instr, st: State, guard) -> State:
        from kverify.semantics.ir.visit import callee_of, instructions, reachable_functions

        target = next((o for o in ins.operands if isinstance(o, Sym)), None)
        fn = None
        if target is not None:
            fn = next((k for k in self.env.module.kernels if k.name == target.name and not k.is_entry), None)
        if fn is None:
            self.reason(f"call at {self.where(ins)}: callee not available", ordering=True)
            return st
        for f in reachable_functions(self.env.module, fn):
            for i in instructions(f.body):
                if not i.supported:
                    self.reason(f"call at {self.where(ins)}: {f.name} uses unsupported {i.opcode}",
                                ordering=True)
                    return st
                sp = space_of(i)
                private = sp is None or sp in ("param", "param::func", "param::entry", "local", "const")
                if i.op in ("bar", "barrier") or i.op.startswith(ASYNC_PREFIXES) \
                        or i.op in UNMODELLED_MEMORY or not private:
                    self.reason(f"call at {self.where(ins)}: {f.name} accesses memory or synchronizes "
                                "(calls are not inlined)", ordering=True)
                    return st
                if i.op == "call" and callee_of(self.env.module, i) is None:
                    self.reason(f"call at {self.where(ins)}: {f.name} calls an unknown function", ordering=True)
                    return st
        self.note_once("calls to functions without memory accesses or barriers are treated as pure")
        return st

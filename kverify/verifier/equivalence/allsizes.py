"""Equivalence for every problem size (``kverify equiv --all-sizes``), under the ``real`` model.

Owns: one symbolic run per kernel of a *generic* thread -- thread and block ids, and every
integer launch argument of the launch template (the sizes, e.g. ``M, N, K``), are z3
bit-vector variables -- and the argument that the two kernels store the same value at the
same address for every thread of every grid the template describes, for every size that
satisfies the precondition (by default: every size a positive multiple of the candidate's
``blockDim.x``, and every buffer's element count below 2^31).

The argument, each step a z3 validity check (a step that does not go through is never
filled in; the attempt ends ``unknown`` with the step that failed):

1. **Loops by induction.** A loop runs with a symbolic iteration counter ``k``, ``0 <= k <
   trip``, where ``trip`` is the front end's trip count. Induction variables are
   ``init + k*step``; the trip count is validated (iteration 0 is entered, the back edge is
   taken exactly when ``k + 1 < trip``, the body has no other exit). A float register whose
   value at the end of the body is ``head + delta(k)``, with ``delta`` free of every
   register's head value, is an accumulator: by induction it leaves the loop as
   ``init + fold(k < trip, delta(k))``. Any other register the loop writes is recomputed
   per iteration (its value after the loop is the last iteration's) or unknown.
2. **Shared memory by parametricity.** A shared load in barrier interval ``p`` of an
   iteration reads what a store site of an earlier interval of the same iteration wrote:
   the writer is a thread of the same CTA given in closed form (each of its thread ids is
   a reader's thread id or a constant), proved to execute the store at exactly the read
   address; no other store site of the interval range (or of a nested loop) may alias the
   address; the store site is injective over the CTA. Barriers and loops holding barriers
   are proved uniform over the CTA.
3. **Outputs.** Each kernel has one global store site outside loops; the grids are equal
   functions of the sizes; thread ``t`` stores in the candidate exactly when it stores in
   the reference, at the same address; loads read only buffers neither kernel writes.
4. **Values.** Folds are compared after regrouping both to a common number of terms per
   step (an unrolled-by-4 loop against an unrolled-by-16 one): equal trip counts, and the
   terms of one step equal pairwise (same coefficients, loads of the same buffer at
   provably equal addresses) for every step.

When a check fails with a z3 model, the smallest sizes of that model are run as a concrete
launch (:func:`engine.check_pair`): a difference there is a confirmed, replayable
counterexample (``refuted`` at that size); otherwise the attempt is ``unknown``.
"""
from __future__ import annotations

import ast
import itertools
import math
import struct
import time
from fractions import Fraction

import z3

from kverify.launch import lookup, param_key
from kverify.launch.layout import shared_layout
from kverify.semantics.ir.errors import KernelError
from kverify.semantics.ir.nodes import Addr, Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg, Reg, Sym, VecOp
from kverify.semantics.ir.optable import OPS, space_of
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.ir.visit import walk
from kverify.semantics.values import TWO_TYPES, Z3Domain, evaluate, is_float, source_widths
from kverify.symbolic.budget import SolverBudget
from kverify.symbolic.executor import Executor
from kverify.symbolic.families import deref, is_atomic, is_barrier
from kverify.symbolic.terms import fit, mk_and, mk_not, mk_or

_D = Z3Domain()
_DEBUG = bool(__import__("os").environ.get("KVERIFY_ALLSIZES_DEBUG"))
BV = z3.BitVec


class NotProved(Exception):
    """A step of the argument did not go through. ``witness``: a z3 formula whose models
    are candidate sizes where the kernels may differ (or ``None``)."""

    def __init__(self, msg, witness=None, probe=False):
        super().__init__(msg)
        self.witness = witness
        self.probe = probe  # a loop was not summarized: larger sizes are worth running concretely


# --------------------------------------------------------------------------- solver
class Solver:
    """z3 on QF_BV, each query within ``timeout_ms`` of solver work, counted in z3's resource units
    (``SolverBudget``): whether a query is answered does not depend on the machine's load."""

    def __init__(self, timeout_ms=20000):
        self.timeout_ms = timeout_ms
        self.queries = 0
        self.log: list = []  # (seconds, result) of every query
        self.full = self.light = None
        self.PRE = z3.Bool("precondition")  # stands for the precondition in every formula

    def check(self, *fs, full=True):
        """z3 on the conjunction of ``fs``. The nonlinear part of the precondition (buffer
        sizes) is left out first: unsat without it is unsat with it."""
        if self.full is not None:
            r, m = self._check(list(fs) + [self.PRE == self.light])
            if r == z3.unsat or not full:
                return r, m
            return self._check(list(fs) + [self.PRE == self.full])
        return self._check(fs)

    def _check(self, fs):
        s = z3.SolverFor("QF_BV")
        s.add(*fs)
        self.queries += 1
        t0 = time.perf_counter()
        b = SolverBudget(self.timeout_ms / 1000, label="equiv.allsizes")
        r = b.check(s)
        dt = time.perf_counter() - t0
        self.log.append((dt, r))
        if _DEBUG:
            import sys
            import traceback
            caller = [f.name for f in traceback.extract_stack(limit=6)[:-2]]
            print(f"  z3 {dt:.2f}s {r} {'/'.join(caller)}", file=sys.stderr, flush=True)
        return r, b.model

    def valid(self, hyps, goal, full=True):
        """True when ``hyps => goal`` for all values; else False. ``full=False``: without the
        nonlinear part of the precondition (cheaper; False may then be spurious)."""
        r, _ = self.check(hyps, mk_not(goal), full=full)
        return r == z3.unsat

    def sat(self, *fs, full=True):
        r, _ = self.check(*fs, full=full)
        return r != z3.unsat  # unknown counts as possibly satisfiable


def free_consts(e, acc=None):
    acc = {} if acc is None else acc
    seen = set()
    todo = [e]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            acc[str(t)] = t
        else:
            todo.extend(t.children())
    return acc


# --------------------------------------------------------------------------- real terms
class Atom:
    """A factor of a monomial: a load of an input buffer at a byte address (``ld``), a
    fold ``sum_{0 <= k < hi} body(k)``, a loop-head placeholder (``head``) or a value the
    argument cannot follow (``opaque``)."""

    __slots__ = ("kind", "buf", "term", "k", "hi", "body", "name", "key", "src")

    def __init__(self, kind, buf=None, term=None, k=None, hi=None, body=None, name=None, src=None):
        self.kind, self.buf, self.term, self.k, self.hi, self.body, self.name = kind, buf, term, k, hi, body, name
        self.src = src  # where a load was issued (for messages only)
        if kind == "ld":
            self.key = ("ld", buf, term.get_id())
        elif kind == "fold":
            self.key = ("fold", k.get_id(), hi.get_id(), poly_key(body))
        else:
            self.key = (kind, name, 0)

    def show(self):
        if self.kind == "ld":
            return f"{self.buf}[...] (loaded at {self.src})" if self.src else f"{self.buf}[...]"
        if self.kind == "fold":
            return f"sum over {self.k}"
        return f"{self.kind}:{self.name}"


def poly_key(p):
    return tuple(sorted((m, str(c)) for m, (c, _) in p.items()))


def p_const(c):
    c = Fraction(c)
    return {(): (c, ())} if c else {}


def p_atom(a):
    return {(a.key,): (Fraction(1), (a,))}


def p_add(p, q, sign=1):
    out = dict(p)
    for m, (c, atoms) in q.items():
        c0 = out.get(m, (Fraction(0), atoms))[0]
        c1 = c0 + sign * c
        if c1:
            out[m] = (c1, atoms)
        else:
            out.pop(m, None)
    return out


def p_mul(p, q):
    out = {}
    for _, (c1, a1) in p.items():
        for _, (c2, a2) in q.items():
            atoms = tuple(sorted(a1 + a2, key=lambda a: a.key))
            out = p_add(out, {tuple(a.key for a in atoms): (c1 * c2, atoms)})
    return out


def p_atoms(p):
    for _, (_, atoms) in p.items():
        for a in atoms:
            yield a
            if a.kind == "fold":
                yield from p_atoms(a.body)


def p_subst(p, pairs):
    if not pairs:
        return p
    out = {}
    for _, (c, atoms) in p.items():
        term = p_const(c)
        for a in atoms:
            if a.kind == "ld":
                a = Atom("ld", a.buf, z3.simplify(z3.substitute(a.term, *pairs)), src=a.src)
            elif a.kind == "fold":
                a = Atom("fold", k=a.k, hi=z3.simplify(z3.substitute(a.hi, *pairs)), body=p_subst(a.body, pairs))
            term = p_mul(term, p_atom(a))
        out = p_add(out, term)
    return out


def show_poly(p):
    if not p:
        return "0"
    parts = []
    for _, (c, atoms) in p.items():
        s = "*".join(a.show() for a in atoms)
        parts.append(f"{c}*{s}" if s and c != 1 else (s or str(c)))
    return " + ".join(parts)


def _float_of(op: FImm) -> Fraction:
    if op.width == 32:
        x = struct.unpack("<f", struct.pack("<I", op.bits & 0xFFFFFFFF))[0]
    elif op.width == 64:
        x = struct.unpack("<d", struct.pack("<Q", op.bits))[0]
    else:
        raise NotProved(f"float immediate of {op.width} bits")
    if not math.isfinite(x):
        raise NotProved(f"a non-finite float immediate ({x}); the real model's sums do not take it")
    return Fraction(x)


# --------------------------------------------------------------------------- size expressions
def size_expr(text, env: dict):
    """A launch-template entry (int or expression over the sizes) as a 64-bit term."""
    if isinstance(text, int):
        return z3.BitVecVal(text, 64)
    if not isinstance(text, str):
        raise NotProved(f"launch entry {text!r} is not an integer expression")
    funcs = {"cdiv": lambda a, b: z3.UDiv(a + b - 1, b), "min": lambda a, b: z3.If(z3.ULT(a, b), a, b),
             "max": lambda a, b: z3.If(z3.UGT(a, b), a, b)}

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return z3.BitVecVal(n.value, 64)
        if isinstance(n, ast.Name) and n.id in env:
            return env[n.id]
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: z3.UDiv(a, b), ast.Mod: lambda: z3.URem(a, b)}
            if type(n.op) in ops:
                return ops[type(n.op)]()
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in funcs and len(n.args) == 2:
            return funcs[n.func.id](*[ev(x) for x in n.args])
        raise NotProved(f"launch entry {text!r}: not an expression over the sizes {sorted(env)}")

    try:
        return ev(ast.parse(text, mode="eval"))
    except SyntaxError:
        raise NotProved(f"launch entry {text!r}: not an expression") from None


def size_cond(text, env: dict):
    """A precondition ``A % 16 == 0`` / ``K >= 16`` / ``N <= 4096`` (';' or ',' separated);
    a malformed one is bad input (``KernelError``)."""
    try:
        return _size_cond(text, env)
    except NotProved as e:
        raise KernelError(str(e), "<command line>", 1, 1) from None


def _size_cond(text, env: dict):
    out = []
    for part in text.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        try:
            n = ast.parse(part, mode="eval").body
        except SyntaxError:
            raise NotProved(f"--all-sizes: {part!r} is not a condition") from None
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1):
            raise NotProved(f"--all-sizes: {part!r} is not a comparison")
        a = size_expr(ast.unparse(n.left), env)
        b = size_expr(ast.unparse(n.comparators[0]), env)
        op = type(n.ops[0])
        f = {ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b, ast.Lt: lambda: z3.ULT(a, b),
             ast.LtE: lambda: z3.ULE(a, b), ast.Gt: lambda: z3.UGT(a, b), ast.GtE: lambda: z3.UGE(a, b)}
        if op not in f:
            raise NotProved(f"--all-sizes: {part!r}: unsupported comparison")
        out.append(f[op]())
    return out


# --------------------------------------------------------------------------- the generic thread
SPECIAL = ("tid", "ctaid")


class Site:
    __slots__ = ("ctx", "phase", "pc", "addr", "val", "width", "instr", "buf", "n")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


class Run:
    """One kernel run by a generic thread (see the module docstring)."""

    def __init__(self, side, names: dict, sizes: dict, thread: dict, solver: Solver, pre, tag: str):
        self.side, self.kernel, self.spec = side, side.kernel, side.spec
        self.names = names  # candidate param key -> shared buffer name
        self.sizes, self.thread, self.solver, self.tag = sizes, thread, solver, tag
        self.pre = pre
        self.per_thread = dict(thread_tid(thread))  # name -> var, renamed for another thread
        self.n = 0
        self.loads: list = []  # buffer names read
        self.gstores: list = []
        self.sstores: list = []
        self.ctx: tuple = ()  # ((loop id, k), ...)
        self.pending: dict = {}
        self.uniform_checked: set = set()
        self.probe = False
        self.reads: list = []  # resolved shared loads: (instr, ctx, phase, addr, width, here, writer site)
        self.nb: dict = {}  # loop id -> barriers per iteration (None: not constant)
        self.kvars: set = set()  # names of loop iteration counters
        self.injective_checked: set = set()
        self.widths: dict = {}
        self.floats: set = set()
        for d in self.kernel.regs:
            w = getattr(d.type, "bits", None) or SCALAR_BITS.get(d.type.name, 32)
            names_ = [d.name] if d.count is None else [f"{d.name}{i}" for i in range(d.count)]
            for nm in names_:
                self.widths[nm] = 1 if d.type.name == "pred" else w
                if is_float(d.type.name):
                    self.floats.add(nm)
        placed, _ = shared_layout(side.module, self.kernel, side.spec.dynamic_smem or 0, red_zone=0)
        self.shared_base = {k: v[0] for k, v in placed.items()}
        self.ntid = [z3.BitVecVal(int(b), 32) for b in side.spec.block]
        self.nctaid = thread["nctaid"][tag]
        self.hyps = mk_and(pre, thread_range(thread, self.ntid, self.nctaid))

    # ---- helpers
    def fresh(self, name, width, per_thread=True):
        self.n += 1
        nm = f"{self.tag}.{name}.{self.n}"
        v = z3.Bool(nm) if width == 1 else BV(nm, width)
        if per_thread:
            self.per_thread[nm] = v
        return v

    def where(self, ins):
        loc = getattr(ins, "loc", None)
        if loc is not None and loc.line:
            return f"{self.side.path}:{loc.line}"
        return f"{self.side.path}:ptx line {getattr(loc, 'ptx_line', 0)}"

    def rename(self, e, extra=()):
        """``e`` as seen by another thread of the same CTA: per-thread variables renamed."""
        pairs = [(v, z3.Const(n + "'", v.sort())) for n, v in self.per_thread.items()] + list(extra)
        return pairs

    # ---- operands
    def special(self, name):
        base, _, comp = name[1:].partition(".")
        if base in ("tid", "ctaid") and comp in "xyz" and comp:
            return self.thread[f"{base}.{comp}"]
        if base == "ntid" and comp in "xyz" and comp:
            return self.ntid["xyz".index(comp)]
        if base == "nctaid" and comp in "xyz" and comp:
            return self.nctaid["xyz".index(comp)]
        return None

    def read(self, st, op, width):
        if isinstance(op, Reg):
            if op.name in st["regs"]:
                v = st["regs"][op.name]
            else:
                v = self.special(op.name)
                if v is None:
                    v = self.fresh(f"undef{op.name}", width or self.widths.get(op.name, 32))
            if isinstance(v, dict):
                raise NotProved(f"float register {op.name} used as an integer")
            return fit(v, width) if width else v
        if isinstance(op, Neg):
            return mk_not(fit(self.read(st, op.reg, 1), 1))
        if isinstance(op, Imm):
            w = width or 32
            return z3.BoolVal(bool(op.value)) if w == 1 else z3.BitVecVal(op.value & ((1 << w) - 1), w)
        if isinstance(op, Sym):
            if op.name in self.shared_base:
                return z3.BitVecVal(self.shared_base[op.name] + op.offset, width or 32)
        raise NotProved(f"operand {op!r} not supported")

    def fread(self, st, op):
        if isinstance(op, Reg):
            v = st["regs"].get(op.name)
            if v is None:
                return p_atom(Atom("opaque", name=f"undef{op.name}"))
            if not isinstance(v, dict):
                raise NotProved(f"integer register {op.name} used as a float")
            return v
        if isinstance(op, FImm):
            return p_const(_float_of(op))
        if isinstance(op, Imm):
            return p_const(op.value)
        raise NotProved(f"float operand {op!r} not supported")

    # ---- statements
    def run(self):
        st = {"pc": z3.BoolVal(True), "regs": {}, "phase": 0}
        st = self.stmts(self.kernel.body, st)
        for s in self.gstores:
            if s.buf in self.loads:
                raise NotProved(f"{self.side.path}: buffer {s.buf} is both read and written")
        self.same_interval_stores()
        return self

    def same_interval_stores(self):
        """No store may overwrite what a resolved shared load reads while it reads it: a store
        site that can run in the load's barrier interval (the same phase, the wrap from the
        last interval of an iteration into the first of the next, another loop) must not alias
        the load's address for any thread and any iteration. (Without it, a missing barrier at
        the end of a loop body would go unnoticed.)"""
        for ins, ctx, p, addr, width, here, _writer in self.reads:
            nb = self.nb.get(ctx[-1]) if ctx else None
            for S2 in self.sstores:
                if S2.ctx == ctx and S2.phase is not None and p is not None:
                    wrap = bool(ctx) and (nb is None or (p == nb and S2.phase == 0) or (p == 0 and S2.phase == nb))
                    if S2.phase != p and not wrap:
                        continue
                ren = self.rename(None) + [(v, z3.Const(n + "'", v.sort())) for n, v in
                                           free_consts(mk_and(S2.pc, S2.addr == S2.addr)).items() if n in self.kvars]
                a2 = z3.substitute(S2.addr, *ren)
                f = mk_and(here, z3.substitute(thread_range_tid(self.thread, self.ntid), *ren),
                           z3.substitute(S2.pc, *ren), z3.ULT(a2, addr + width), z3.ULT(addr, a2 + S2.width))
                if self.solver.sat(f, full=False):
                    raise NotProved(f"{self.where(ins)}: the store at {self.where(S2.instr)} may overwrite what this "
                                    f"shared load reads within the same barrier interval (a missing barrier?)")

    def stmts(self, body, st):
        for s in body:
            if z3.is_false(st["pc"]):
                break
            if isinstance(s, Instr):
                st = self.instr(s, st)
            elif isinstance(s, If):
                st = self.if_(s, st)
            elif isinstance(s, Loop):
                st = self.loop(s, st)
            elif isinstance(s, Block):
                key = ("break", s.label)
                mark = len(self.pending.get(key, []))
                end = self.stmts(s.body, st)
                outs = self.pending.get(key, [])[mark:]
                if outs:
                    del self.pending[key][mark:]
                    st = self.merge([end] + outs)
                else:
                    st = end
            elif isinstance(s, Break):
                self.pending.setdefault(("break", s.label), []).append(st)
                st = dict(st, pc=z3.BoolVal(False))
            elif isinstance(s, Continue):
                self.pending.setdefault(("cont", s.label), []).append(st)
                st = dict(st, pc=z3.BoolVal(False))
        return st

    def decide(self, pc, c):
        if self.solver.valid(mk_and(self.hyps, pc), c, full=False):
            return True
        if self.solver.valid(mk_and(self.hyps, pc), mk_not(c), full=False):
            return False
        return None

    def if_(self, s, st):
        c = fit(self.read(st, s.cond, 1), 1)
        if s.negated:
            c = mk_not(c)
        d = self.decide(st["pc"], c)
        if d is True:
            return self.stmts(s.then, st)
        if d is False:
            return self.stmts(s.orelse, st)
        t = self.stmts(s.then, dict(st, pc=mk_and(st["pc"], c), regs=dict(st["regs"])))
        e = self.stmts(s.orelse, dict(st, pc=mk_and(st["pc"], mk_not(c)), regs=dict(st["regs"])))
        return self.merge([t, e])

    def merge(self, states):
        live = [s for s in states if not z3.is_false(s["pc"])]
        if not live:
            return states[0]
        if len(live) == 1:
            return live[0]
        phases = {s["phase"] for s in live}
        out = {"pc": mk_or(*[s["pc"] for s in live]), "regs": {}, "phase": phases.pop() if len(phases) == 1 else None}
        names = set().union(*[s["regs"] for s in live])
        for r in names:
            vals = [(s["pc"], s["regs"].get(r)) for s in live]
            defined = [(pc, v) for pc, v in vals if v is not None]
            first = defined[0][1]
            if len(defined) < len(vals):  # undefined on some path: not a value to rely on
                out["regs"][r] = (p_atom(Atom("opaque", name=f"undef{r}")) if r in self.floats
                                  else self.fresh(f"undef{r}", self.widths.get(r, 32)))
                continue
            if isinstance(first, dict):
                if all(isinstance(v, dict) and poly_key(v) == poly_key(first) for _, v in defined):
                    out["regs"][r] = first
                else:
                    out["regs"][r] = p_atom(Atom("opaque", name=f"merge{r}"))
                continue
            if any(isinstance(v, dict) for _, v in defined):
                out["regs"][r] = p_atom(Atom("opaque", name=f"merge{r}"))
                continue
            v = defined[-1][1]
            for pc, x in reversed(defined[:-1]):
                if z3.is_bool(x) != z3.is_bool(v) or (not z3.is_bool(x) and x.size() != v.size()):
                    v = None
                    break
                v = z3.If(pc, x, v)
            out["regs"][r] = v if v is not None else self.fresh(f"merge{r}", self.widths.get(r, 32))
        return out

    # ---- instructions
    def instr(self, ins: Instr, st):
        if ins.guard is not None:
            g = fit(self.read(st, ins.guard.reg, 1), 1)
            if ins.guard.negated:
                g = mk_not(g)
            d = self.decide(st["pc"], g)
            if d is False:
                return st
            if d is None:
                raise NotProved(f"{self.where(ins)}: {ins.opcode} is guarded by a predicate that varies by "
                                f"thread or size")
        if not ins.supported:
            raise NotProved(f"{self.where(ins)}: unsupported instruction {ins.opcode}")
        if self.probe:
            try:
                return self._instr(ins, st)
            except NotProved:
                for o in ins.operands[:1]:
                    if isinstance(o, Reg):
                        st["regs"][o.name] = (p_atom(Atom("opaque", name="probe")) if o.name in self.floats
                                              else self.fresh("probe", self.widths.get(o.name, 32)))
                return st
        return self._instr(ins, st)

    def _instr(self, ins, st):
        row = OPS[ins.op]
        if is_barrier(ins):
            return self.barrier(ins, st)
        if row.flow in ("return", "exit"):
            return dict(st, pc=z3.BoolVal(False))
        if row.effect == "memory" and not is_atomic(ins):  # ld / ldu / st
            return self.memory(ins, st)
        if row.semantics is None or row.semantics == "atom" or row.flow is not None or row.effect != "value":
            raise NotProved(f"{self.where(ins)}: {ins.opcode} is outside what the all-sizes argument covers")
        return self.alu(ins, st)

    def alu(self, ins, st):
        fam, mods, ops = OPS[ins.op].semantics, ins.mods, ins.operands
        types = ins.types()
        if not types:
            raise NotProved(f"{self.where(ins)}: {ins.opcode} has no type")
        d = ops[0]
        if not isinstance(d, Reg):
            raise NotProved(f"{self.where(ins)}: {ins.opcode}: destination not a register")
        if fam == "cvta":
            st["regs"][d.name] = self.read(st, ops[1], SCALAR_BITS[types[-1]])
            return st
        ty = types[-1]
        if is_float(ty) and fam not in ("setp", "set", "cvt", "selp", "slct"):
            args = [self.fread(st, o) for o in ops[1:]]
            if fam == "mov":
                v = args[0]
            elif fam == "add":
                v = p_add(args[0], args[1])
            elif fam == "sub":
                v = p_add(args[0], args[1], -1)
            elif fam == "mul":
                v = p_mul(args[0], args[1])
            elif fam in ("fma", "mad"):
                v = p_add(p_mul(args[0], args[1]), args[2])
            elif fam == "neg":
                v = p_mul(p_const(-1), args[0])
            else:
                v = p_atom(Atom("opaque", name=f"{ins.opcode}@{self.where(ins)}"))
            st["regs"][d.name] = v
            return st
        if fam in ("cvt", "set", "slct", "setp", "selp") and any(is_float(t) for t in types):
            raise NotProved(f"{self.where(ins)}: {ins.opcode} on float data")
        if fam in TWO_TYPES:
            if len(types) < 2:
                raise NotProved(f"{self.where(ins)}: {ins.opcode}")
            ty = (types[0], types[1])
        srcw = source_widths(fam, ty, mods, len(ops) - 1)
        if "cc" in mods or fam in ("addc", "subc", "madc"):
            raise NotProved(f"{self.where(ins)}: carry arithmetic")
        if fam == "mov":
            w = 1 if ty == "pred" else SCALAR_BITS[ty]
            if isinstance(ops[1], VecOp):
                raise NotProved(f"{self.where(ins)}: vector mov")
            st["regs"][d.name] = fit(self.read(st, ops[1], w), w)
            return st
        args = [self.read(st, o, w) for o, w in zip(ops[1:], srcw)]
        if fam == "lop3":
            if not isinstance(ops[4], Imm):
                raise NotProved(f"{self.where(ins)}: lop3 without an immediate table")
            args.append(ops[4].value)
        try:
            res = evaluate(_D, fam, ty, mods, *args)
        except Exception as e:  # noqa: BLE001 - any form the semantics does not take
            raise NotProved(f"{self.where(ins)}: {ins.opcode}: {e}") from None
        if isinstance(res, tuple):
            res = res[0]
        st["regs"][d.name] = z3.simplify(res) if not z3.is_bool(res) else res
        return st

    def memory(self, ins, st):
        space = space_of(ins)
        types = ins.types()
        ty = types[-1] if types else "b32"
        if any(m in ("v2", "v4", "v8") for m in ins.mods):
            raise NotProved(f"{self.where(ins)}: vector {ins.op}")
        width = max(1, SCALAR_BITS.get(ty, 32) // 8)
        ops = ins.operands
        slot, mode = deref(ins) or (None, None)
        if mode not in ("read", "write") or is_atomic(ins):
            raise NotProved(f"{self.where(ins)}: {ins.opcode} is outside what the all-sizes argument covers")
        store = mode == "write"
        a = ops[slot]
        if not isinstance(a, Addr):
            raise NotProved(f"{self.where(ins)}: address operand not understood")
        if space in ("param", "param::entry", "param::func") and not store:
            return self.load_param(ins, st, a)
        if space in ("shared", "shared::cta"):
            addr = self.read(st, a.base, 32) + a.offset if a.base is not None else z3.BitVecVal(a.offset, 32)
            addr = z3.simplify(addr)
            if store:
                val = self.fread(st, ops[1]) if is_float(ty) else fit(self.read(st, ops[1], width * 8), width * 8)
                self.sstores.append(Site(ctx=self.ctx, phase=st["phase"], pc=st["pc"], addr=addr, val=val,
                                         width=width, instr=ins, buf=None, n=len(self.sstores)))
                return st
            st["regs"][ops[0].name] = self.shared_read(ins, st, addr, width, is_float(ty))
            return st
        if space in ("global", "generic"):
            base = self.read(st, a.base, 64) if a.base is not None else z3.BitVecVal(0, 64)
            addr = z3.simplify(base + a.offset)
            bufs = [n for n in free_consts(addr) if n.startswith("ptr.")]
            if len(bufs) != 1:
                raise NotProved(f"{self.where(ins)}: the address is not derived from exactly one buffer parameter")
            buf = bufs[0][4:]
            if store:
                if self.ctx:
                    raise NotProved(f"{self.where(ins)}: a global store inside a loop")
                if not is_float(ty):
                    raise NotProved(f"{self.where(ins)}: only float outputs are compared")
                self.gstores.append(Site(ctx=(), phase=st["phase"], pc=st["pc"], addr=addr, val=self.fread(st, ops[1]),
                                         width=width, instr=ins, buf=buf, n=len(self.gstores)))
                return st
            if not is_float(ty):
                raise NotProved(f"{self.where(ins)}: an integer load from global memory")
            if any(s.buf == buf for s in self.gstores):
                raise NotProved(f"{self.where(ins)}: buffer {buf} is read after it is written")
            self.loads.append(buf)
            st["regs"][ops[0].name] = p_atom(Atom("ld", buf, addr, src=self.where(ins)))
            return st
        raise NotProved(f"{self.where(ins)}: {space} memory is outside what the all-sizes argument covers")

    def load_param(self, ins, st, a):
        if not isinstance(a.base, Sym) or a.offset:
            raise NotProved(f"{self.where(ins)}: parameter load not understood")
        idx = next((i for i, p in enumerate(self.kernel.params) if p.name == a.base.name), None)
        if idx is None:
            raise NotProved(f"{self.where(ins)}: unknown parameter {a.base.name}")
        d = ins.operands[0]
        w = self.widths.get(d.name, SCALAR_BITS.get(ins.types()[-1], 32))
        key = param_key(self.kernel, idx)
        if lookup(self.spec.buffers, self.kernel, idx) is not None:
            st["regs"][d.name] = fit(BV(f"ptr.{self.names.get(key, key)}", 64), w)
            return st
        raw = self.side_template_args.get(key, self.side_template_args.get(self.kernel.params[idx].name))
        if raw is None:
            raise NotProved(f"{self.where(ins)}: parameter {key} has no launch argument")
        if isinstance(raw, float):
            if d.name in self.floats:
                st["regs"][d.name] = p_const(Fraction(raw))
                return st
            raise NotProved(f"{self.where(ins)}: float argument {key} read as an integer")
        v = self.sizes[key] if key in self.sizes else size_expr(raw, self.sizes)
        st["regs"][d.name] = fit(v, w)
        return st

    # ---- barriers and shared memory
    def barrier(self, ins, st):
        ops = ins.operands
        if OPS[ins.op].sync != "bar" or len(ops) != 1 or not isinstance(ops[0], Imm) or ops[0].value != 0 \
                or any(m in ("arrive", "red") for m in ins.mods):
            raise NotProved(f"{self.where(ins)}: only bar.sync 0 is covered")
        self.uniform(st["pc"], f"the barrier at {self.where(ins)}")
        return dict(st, phase=None if st["phase"] is None else st["phase"] + 1)

    def uniform(self, term, what):
        """``term`` is the same for every thread of the CTA."""
        key = term.get_id()
        if key in self.uniform_checked:
            return
        pairs = self.rename(term)
        other = z3.substitute(term, *pairs)
        hyps2 = mk_and(self.hyps, z3.substitute(thread_range(self.thread, self.ntid, self.nctaid), *pairs))
        goal = (term == other)
        if not self.solver.valid(hyps2, goal, full=False):
            raise NotProved(f"{what} is not uniform over the CTA (it depends on the thread)")
        self.uniform_checked.add(key)

    def shared_read(self, ins, st, addr, width, flt):
        if self.probe:  # the first pass of a loop only looks for induction variables
            return p_atom(Atom("opaque", name="probe")) if flt else self.fresh("probe", width * 8)
        p = st["phase"]
        if p is None:
            raise NotProved(f"{self.where(ins)}: barrier intervals before this shared load are not counted")
        here = mk_and(self.hyps, st["pc"])
        cands = [s for s in self.sstores if s.ctx == self.ctx and s.phase is not None and s.phase < p]
        for S in sorted(cands, key=lambda s: (-s.phase, -s.n)):
            if S.width != width:
                continue
            w = self.writer(S, here, addr)
            if w is None:
                continue
            pairs = w
            for S2 in self.sstores:
                if S2 is S:
                    continue
                if S2.ctx == self.ctx and S2.phase is not None and S2.phase < S.phase:
                    continue
                if S2.ctx != self.ctx and not (len(S2.ctx) > len(self.ctx) and S2.ctx[:len(self.ctx)] == self.ctx):
                    continue
                ren = self.rename(None)
                a2 = z3.substitute(S2.addr, *ren)
                f = mk_and(here, z3.substitute(thread_range_tid(self.thread, self.ntid), *ren),
                           z3.substitute(S2.pc, *ren), z3.ULT(a2, addr + width), z3.ULT(addr, a2 + S2.width))
                if self.solver.sat(f, full=False):
                    raise NotProved(f"{self.where(ins)}: the shared load may also read the store at "
                                    f"{self.where(S2.instr)}")
            self.injective(S)
            self.reads.append((ins, self.ctx, p, addr, width, here, S))
            if flt:
                if not isinstance(S.val, dict):
                    raise NotProved(f"{self.where(ins)}: float load of an integer store")
                return p_subst(S.val, pairs)
            if isinstance(S.val, dict):
                raise NotProved(f"{self.where(ins)}: integer load of a float store")
            return z3.simplify(z3.substitute(S.val, *pairs))
        raise NotProved(f"{self.where(ins)}: no store of an earlier barrier interval of the same iteration "
                        f"provably wrote what this shared load reads")

    def writer(self, S, here, addr):
        """The writer thread of ``addr`` at ``S`` in closed form: substitution pairs for the
        per-thread variables, or ``None``."""
        ren = self.rename(None)
        comps = [f"tid.{c}" for c in "xyz"]
        wv = {c: z3.substitute(self.thread[c], *ren) for c in comps}
        f = mk_and(here, z3.substitute(thread_range_tid(self.thread, self.ntid), *ren), z3.substitute(S.pc, *ren),
                   z3.substitute(S.addr, *ren) == addr)
        r, m = self.solver.check(f, full=False)
        if r != z3.sat:
            return None
        models = [m]
        mine = [self.thread[c] for c in comps]
        for v in mine:  # further models, each moving one of the reader's thread ids
            r2, m2 = self.solver.check(f, v != m.eval(v, model_completion=True), full=False)
            if r2 == z3.sat:
                models.append(m2)

        def agree(x, o):
            return all(z3.is_true(z3.simplify(mm.eval(x, model_completion=True) == mm.eval(o, model_completion=True)))
                       for mm in models)

        closed = {}
        for c in comps:
            options = [o for o in [m.eval(wv[c], model_completion=True)] + mine if agree(wv[c], o)]
            if not options:
                return None
            closed[c] = options[0]
        if not self.solver.valid(f, mk_and(*[wv[c] == closed[c] for c in comps]), full=False):
            return None
        pairs = [(self.thread[c], closed[c]) for c in comps]
        # every other per-thread variable of the writer is its own (unconstrained) copy
        pairs += [(v, z3.Const(n + "'", v.sort())) for n, v in self.per_thread.items() if n not in
                  {str(self.thread[c]) for c in comps}]
        w_rng = z3.substitute(thread_range_tid(self.thread, self.ntid), *pairs)
        ok = self.solver.valid(here, mk_and(w_rng, z3.substitute(S.pc, *pairs), z3.substitute(S.addr, *pairs) == addr),
                               full=False)
        return pairs if ok else None

    def injective(self, S):
        if S.n in self.injective_checked:
            return
        r1 = self.rename(None)
        r2 = [(v, z3.Const(str(n) + "''", v.sort())) for v, n in ((v, n) for n, v in self.per_thread.items())]
        t1 = [z3.substitute(self.thread[f"tid.{c}"], *r1) for c in "xyz"]
        t2 = [z3.substitute(self.thread[f"tid.{c}"], *r2) for c in "xyz"]
        f = mk_and(self.hyps, z3.substitute(thread_range_tid(self.thread, self.ntid), *r1),
                   z3.substitute(thread_range_tid(self.thread, self.ntid), *r2),
                   z3.substitute(S.pc, *r1), z3.substitute(S.pc, *r2),
                   z3.Or(*[a != b for a, b in zip(t1, t2)]), z3.substitute(S.addr, *r1) == z3.substitute(S.addr, *r2))
        if self.solver.sat(f, full=False):
            raise NotProved(f"{self.where(S.instr)}: two threads of the CTA may store to the same shared address")
        self.injective_checked.add(S.n)

    # ---- loops
    def symint(self, s, regs0, signed=True):
        def ext(t):
            if z3.is_bool(t):
                t = z3.If(t, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            w = t.size()
            if w >= 64:
                return z3.Extract(63, 0, t)
            return (z3.SignExt if signed else z3.ZeroExt)(64 - w, t)

        def atom(a):
            if isinstance(a, str):
                if a in regs0 and not isinstance(regs0[a], dict):
                    return ext(regs0[a])
                for i, p in enumerate(self.kernel.params):
                    if a in (p.name, p.source_name):
                        key = param_key(self.kernel, i)
                        if key in self.sizes:
                            return ext(fit(self.sizes[key], 32))
                v = self.special(a) if a.startswith("%") else None
                if v is not None:
                    return z3.ZeroExt(32, v)
                raise NotProved(f"symbol {a} in a loop summary")
            x, y = [self.symint(b, regs0, signed) for b in a.args]
            if a.op == "floordiv":
                q = x / y
                return z3.If(z3.And(z3.SRem(x, y) != 0, (x < 0) != (y < 0)), q - 1, q)
            if a.op == "mod":
                q = x / y
                q = z3.If(z3.And(z3.SRem(x, y) != 0, (x < 0) != (y < 0)), q - 1, q)
                return x - q * y
            if a.op == "min":
                return z3.If(x < y, x, y)
            if a.op == "max":
                return z3.If(x > y, x, y)
            raise NotProved(f"{a.op} in a loop summary")

        out = z3.BitVecVal(0, 64)
        for mono, c in s.terms:
            t = z3.BitVecVal(c & ((1 << 64) - 1), 64)
            for a in mono:
                t = t * atom(a)
            out = out + t
        return z3.simplify(out)

    def loop(self, lp: Loop, st):
        if lp.trip_count is None:
            raise NotProved(f"loop {lp.label} at {self.where(lp)}: no trip count", probe=True)
        written = set()
        barriers = False
        for s, _ in walk(lp.body):
            if isinstance(s, Instr):
                written.update(Executor.dests(s))
                if s.operands and isinstance(s.operands[0], Reg) and (deref(s) or (None, None))[1] != "write":
                    written.add(s.operands[0].name)
                if is_barrier(s):
                    barriers = True
        regs0 = st["regs"]
        last = None
        for signed in (True, False):
            try:
                return self._loop(lp, st, regs0, written, barriers, signed)
            except NotProved as e:
                last = e
        raise last

    def _loop(self, lp, st, regs0, written, barriers, signed):
        # a first pass finds further induction variables (registers the body advances by a
        # loop-invariant amount, e.g. a pointer bumped by a stride); the second pass uses them
        n0 = len(self.sstores)
        probe = self.probe
        try:
            self.probe = True
            try:
                extra = self._loop_body(lp, st, regs0, written, barriers, signed, {}, probe=True)
            except NotProved:
                extra = {}
            finally:
                self.probe = probe
                del self.sstores[n0:]
            return self._loop_body(lp, st, regs0, written, barriers, signed, extra)
        except NotProved:
            del self.sstores[n0:]
            raise

    def _loop_body(self, lp, st, regs0, written, barriers, signed, extra, probe=False):
        trip = self.symint(lp.trip_count, regs0, signed)
        self.n += 1
        k = BV(f"{self.tag}.k{self.n}.{lp.label}", 64)
        self.kvars.add(str(k))
        rng = mk_and(k >= 0, k < trip)
        head_pc = mk_and(st["pc"], rng)
        regs = dict(regs0)
        ivs = {iv.reg.name: iv for iv in lp.ivs if iv.reg.name in written}
        steps = {}
        heads = {}
        for r in sorted(written):
            old = regs0.get(r)
            if r in ivs and old is not None and not isinstance(old, dict) and not z3.is_bool(old):
                w = old.size()
                step = fit(self.symint(ivs[r].step, regs0, signed), w)
                steps[r] = step
                regs[r] = z3.simplify(old + fit(k, w) * step)
            elif r in extra and old is not None and not isinstance(old, dict) and not z3.is_bool(old):
                steps[r] = extra[r]
                regs[r] = z3.simplify(old + fit(k, old.size()) * extra[r])
            elif r in self.floats:
                heads[r] = Atom("head", name=f"{lp.label}.{r}")
                regs[r] = p_atom(heads[r])
            else:
                regs[r] = self.fresh(f"h{r}", self.widths.get(r, 32))
        if barriers and not probe:
            self.uniform(trip, f"the trip count of loop {lp.label}")
            self.uniform(st["pc"], f"the entry of loop {lp.label}")
        marks = {key: len(v) for key, v in self.pending.items()}
        mark = marks.get(("cont", lp.label), 0)
        self.ctx = self.ctx + (id(lp),)
        try:
            end = self.stmts(lp.body, {"pc": head_pc, "regs": dict(regs), "phase": 0})
        finally:
            self.ctx = self.ctx[:-1]
        conts = self.pending.get(("cont", lp.label), [])[mark:]
        if conts:
            del self.pending[("cont", lp.label)][mark:]
        for key, lst in self.pending.items():
            if len(lst) > marks.get(key, 0):
                raise NotProved(f"loop {lp.label} at {self.where(lp)}: a {key[0]} to {key[1]} leaves the loop")
        if not conts:
            raise NotProved(f"loop {lp.label}: no back edge")
        cont = self.merge(conts) if len(conts) > 1 else conts[0]
        if not probe:
            self.nb[id(lp)] = cont["phase"] if all(c["phase"] == cont["phase"] for c in conts) else None
        if probe:
            found = {}
            hv = {str(v) for r, v in regs.items() if r in written and not isinstance(v, dict)}
            for r in written:
                h, now = regs.get(r), cont["regs"].get(r)
                if r in steps or r in self.floats or h is None or isinstance(h, dict) or isinstance(now, dict) \
                        or now is None or z3.is_bool(h) or z3.is_bool(now) or h.size() != now.size():
                    continue
                d = z3.simplify(now - h)
                fv = set(free_consts(d))
                if not (fv & hv) and str(k) not in fv:
                    found[r] = d
            return found
        where = f"loop {lp.label} at {self.where(lp)}"
        # trip count: iteration 0 is entered; the back edge is taken exactly when k + 1 < trip
        if not self.solver.valid(mk_and(self.hyps, st["pc"]), trip > 0):
            raise NotProved(f"{where}: the trip count is not positive on entry", probe=True)
        nxt = k + 1 < trip
        if not self.solver.valid(mk_and(self.hyps, head_pc), mk_and(cont["pc"] == nxt, end["pc"] == mk_not(nxt))):
            raise NotProved(f"{where}: the back edge is not taken exactly while k + 1 < trip", probe=True)
        # induction variables
        for r, step in steps.items():
            now = cont["regs"].get(r)
            if now is None or isinstance(now, dict) or z3.is_bool(now):
                raise NotProved(f"{where}: induction variable {r}")
            want = regs0[r] + fit(k + 1, now.size()) * step
            if not self.solver.valid(mk_and(self.hyps, cont["pc"]), now == want):
                raise NotProved(f"{where}: {r} is not an induction variable ({now} against {want})")
        # float registers: accumulators and per-iteration values
        out_regs = {}
        last = [(k, trip - 1)]
        for r in written:
            if r not in self.floats:
                continue
            c, e = cont["regs"].get(r), end["regs"].get(r)
            if not isinstance(c, dict) or not isinstance(e, dict) or poly_key(c) != poly_key(e):
                out_regs[r] = p_atom(Atom("opaque", name=f"{lp.label}.{r}"))
                continue
            hk = (heads[r].key,)
            delta = {m: v for m, v in c.items() if m != hk}
            if hk in c and c[hk][0] == 1 and not any(a.kind == "head" for a in p_atoms(delta)):
                init = regs0.get(r)
                if not isinstance(init, dict):  # undefined before the loop, or not a float
                    init = None
                if init is None:
                    out_regs[r] = p_atom(Atom("opaque", name=f"{lp.label}.{r}"))
                    continue
                out_regs[r] = p_add(init, p_atom(Atom("fold", k=k, hi=trip, body=delta)))
            elif not any(a.kind == "head" for a in p_atoms(c)):
                out_regs[r] = p_subst(c, last)
            else:
                out_regs[r] = p_atom(Atom("opaque", name=f"{lp.label}.{r}"))
        regs_after = dict(end["regs"])
        for r, v in list(regs_after.items()):
            if r in written and not isinstance(v, dict):
                regs_after[r] = z3.simplify(z3.substitute(v, *last))
        regs_after.update(out_regs)
        phase = st["phase"] if not barriers else None
        return {"pc": st["pc"], "regs": regs_after, "phase": phase}


def thread_tid(thread):
    return {str(thread[f"tid.{c}"]): thread[f"tid.{c}"] for c in "xyz"}


def thread_range_tid(thread, ntid):
    return mk_and(*[z3.ULT(thread[f"tid.{c}"], n) for c, n in zip("xyz", ntid)])


def thread_range(thread, ntid, nctaid):
    return mk_and(thread_range_tid(thread, ntid),
                  *[z3.ULT(thread[f"ctaid.{c}"], g) for c, g in zip("xyz", nctaid)])


# --------------------------------------------------------------------------- comparison
def _check_kinds(p, what):
    for a in p_atoms(p):
        if a.kind in ("head", "opaque"):
            raise NotProved(f"the {what} stored value depends on a value the argument cannot follow ({a.show()})")


def _sig(atoms):
    return tuple((a.kind, a.buf) for a in atoms)


def sample_points(hyps, solver, n=2):
    """Up to ``n`` models of ``hyps`` with different sizes (points where every term of a
    valid equation agrees; a pair that differs at one is not equal)."""
    pts = []
    f = hyps
    for _ in range(n):
        r, m = solver.check(f)
        if r != z3.sat:
            break
        pts.append(m)
        sz = [c for nm, c in free_consts(solver.full).items() if nm != "precondition"]
        f = mk_and(f, z3.Or(*[c != m.eval(c, model_completion=True) for c in sz])) if sz else f
    return pts


def _agree(a, b, pts):
    for m in pts:
        if not z3.is_true(z3.simplify(m.eval(a.term, model_completion=True) == m.eval(b.term, model_completion=True))):
            return False
    return True


def match_monomials(ms1, ms2, hyps, solver, what):
    """Pair the monomials ``[(coef, atoms)]`` of two sums, each pair equal for all values
    under ``hyps``; raises :class:`NotProved` (with a witness when a term has no equal).
    Sample points of ``hyps`` choose the pairing; one validity check proves it."""
    if len(ms1) != len(ms2):
        raise NotProved(f"{what}: {len(ms1)} terms against {len(ms2)}")
    flat = all(a.kind == "ld" for _, atoms in ms1 + ms2 for a in atoms)
    if flat and ms1:
        pts = sample_points(hyps, solver)
        for _ in range(4 if pts else 0):
            left = list(range(len(ms2)))
            eqs = []
            for i, (c1, a1) in enumerate(ms1):
                x1 = sorted(a1, key=lambda a: (a.kind, a.buf or ""))
                order = ([i] if i in left else []) + [j for j in left if j != i]
                for j in order:
                    c2, a2 = ms2[j]
                    x2 = sorted(a2, key=lambda a: (a.kind, a.buf or ""))
                    if c1 == c2 and _sig(x1) == _sig(x2) and all(_agree(a, b, pts) for a, b in zip(x1, x2)):
                        left.remove(j)
                        eqs += [a.term == b.term for a, b in zip(x1, x2)]
                        break
                else:
                    # a witness: sizes where this term differs from every remaining term
                    diffs = []
                    for j in left:
                        c2, a2 = ms2[j]
                        x2 = sorted(a2, key=lambda a: (a.kind, a.buf or ""))
                        if c1 == c2 and _sig(x1) == _sig(x2):
                            diffs.append(mk_or(*[a.term != b.term for a, b in zip(x1, x2)]))
                    raise NotProved(f"{what}: the term {' * '.join(a.show() for a in x1)} has no equal term in "
                                    f"the reference (it differs from each one at some sizes)",
                                    mk_and(hyps, *diffs) if diffs else None)
            r, m = solver.check(hyps, mk_not(mk_and(*eqs)))
            if r == z3.unsat:
                return
            if r != z3.sat:
                break
            pts.append(m)  # a point where the pairing fails: pair again with it
    left = list(range(len(ms2)))
    for i, (c1, a1) in enumerate(ms1):
        order = ([i] if i in left else []) + [j for j in left if j != i]
        found = None
        first_fail = None
        for j in order:
            c2, a2 = ms2[j]
            if c1 != c2 or sorted(_sig(a1)) != sorted(_sig(a2)):
                continue
            x1 = sorted(a1, key=lambda a: (a.kind, a.buf or ""))
            x2 = sorted(a2, key=lambda a: (a.kind, a.buf or ""))
            try:
                if atoms_equal(x1, x2, hyps, solver, what):
                    found = j
                    break
            except NotProved as e:
                first_fail = first_fail or e
                continue
            if first_fail is None:
                eqs = [a.term == b.term for a, b in zip(x1, x2) if a.kind == "ld"]
                first_fail = NotProved(f"{what}: term {' * '.join(a.show() for a in x1)} has no equal term",
                                       mk_and(hyps, mk_not(mk_and(*eqs))) if eqs else None)
        if found is None:
            raise first_fail or NotProved(f"{what}: term {' * '.join(a.show() for a in a1)} has no equal term")
        left.remove(found)


def atoms_equal(x1, x2, hyps, solver, what):
    eqs = []
    for a, b in zip(x1, x2):
        if a.kind == "ld":
            eqs.append(a.term == b.term)
        elif a.kind == "fold":
            fold_equal(a, b, hyps, solver, what)
        else:
            return False
    return solver.valid(hyps, mk_and(*eqs)) if eqs else True


def regroup(F, r, s, hyps, solver, what):
    if r == 1:
        return p_subst(F.body, [(F.k, s)]), F.hi
    if not solver.valid(hyps, z3.URem(F.hi, r) == 0):
        raise NotProved(f"{what}: a loop's trip count is not a multiple of {r} for every size",
                        mk_and(hyps, z3.URem(F.hi, r) != 0))
    body = {}
    for q in range(r):
        body = p_add(body, p_subst(F.body, [(F.k, s * r + q)]))
    return body, z3.simplify(z3.UDiv(F.hi, r))


_STEP = [0]


def fold_equal(F, G, hyps, solver, what):
    """``sum_{k < F.hi} F.body(k) == sum_{k < G.hi} G.body(k)``: both regrouped to a common
    number of terms per step, then equal step counts and equal terms at every step."""
    c1, c2 = len(F.body), len(G.body)
    if not c1 or not c2:
        raise NotProved(f"{what}: an empty fold")
    if any(a.kind == "fold" for a in p_atoms(F.body)) or any(a.kind == "fold" for a in p_atoms(G.body)):
        raise NotProved(f"{what}: nested folds are not compared")
    L = c1 * c2 // math.gcd(c1, c2)
    _STEP[0] += 1
    s = BV(f"step{_STEP[0]}", 64)
    b1, h1 = regroup(F, L // c1, s, hyps, solver, what)
    b2, h2 = regroup(G, L // c2, s, hyps, solver, what)
    if not solver.valid(hyps, h1 == h2):
        raise NotProved(f"{what}: the accumulating loops run a different number of steps "
                        f"(after regrouping to {L} terms per step)",
                        mk_and(hyps, h1 != h2))
    inner = mk_and(hyps, s >= 0, s < h1)
    match_monomials(list(b1.values()), list(b2.values()), inner, solver, what)
    return True


# --------------------------------------------------------------------------- driver
def _template(launch, file, kernel):
    from kverify.launch import load

    from . import REQUIRED
    return load(launch, file, kernel, required=REQUIRED).data


def default_precondition(sizes, tile):
    return "; ".join(f"{s} % {tile} == 0" for s in sizes)


def prove_all_sizes(cand, ref, cand_t: dict, ref_t: dict, precondition: str | None, timeout_s: float = 20.0):
    """Run the argument of the module docstring. Returns ``(scope, notes)`` when it holds;
    raises :class:`NotProved` otherwise. ``cand``/``ref``: sides instantiated at the
    template's own sizes (they give the block, the buffers and the outputs)."""
    from .engine import buffer_names

    solver = Solver(int(timeout_s * 1000))
    names = []
    for t in (cand_t, ref_t):
        for k, v in (t.get("args") or {}).items():
            if isinstance(v, int) and not isinstance(v, bool) and k not in names:
                names.append(k)
    if not names:
        raise NotProved("the launch template has no integer size argument")
    raw = {n: BV(n, 32) for n in names}
    sizes = {n: z3.ZeroExt(32, v) for n, v in raw.items()}
    for t in (cand_t, ref_t):
        for blk in t.get("block") or ():
            if not isinstance(blk, int):
                raise NotProved("the block size depends on the sizes; only a fixed block is covered")
    tile = int(cand.spec.block[0])
    text = precondition if precondition else default_precondition(names, tile)
    conds = size_cond(text, sizes)
    pre = [*conds]
    for n in names:
        pre.append(z3.UGE(sizes[n], 1))
        pre.append(z3.ULT(sizes[n], 1 << 31))
    thread = {f"{b}.{c}": BV(f"{b}.{c}", 32) for b in SPECIAL for c in "xyz"}
    thread["nctaid"] = {}
    for tag, t in (("cand", cand_t), ("ref", ref_t)):
        g = list(t.get("grid") or [1, 1, 1]) + [1] * (3 - len(t.get("grid") or [1, 1, 1]))
        terms = [size_expr(x, sizes) for x in g]
        for i, x in enumerate(terms):
            pre.append(z3.UGE(x, 1))
            pre.append(z3.ULE(x, (1 << 31) - 1 if i == 0 else 65535))
        thread["nctaid"][tag] = [z3.Extract(31, 0, x) for x in terms]
    n_light = len(pre)
    for t in (cand_t, ref_t):
        for b in (t.get("buffers") or {}).values():
            count = z3.BitVecVal(1, 64)
            for e in b.get("shape") or ():
                x = size_expr(e, sizes)
                pre.append(z3.ULT(x, 1 << 31))
                count = count * x
            pre.append(z3.ULT(count, 1 << 31))
    solver.full, solver.light = mk_and(*pre), mk_and(*pre[:n_light])
    pre = solver.PRE
    if not solver.sat(pre):
        raise NotProved(f"the precondition {text!r} admits no sizes")
    if tuple(cand.spec.block) != tuple(ref.spec.block):
        raise NotProved(f"the blocks differ ({cand.spec.block} against {ref.spec.block}); only the identity "
                        f"thread correspondence is tried")
    for i in range(3):
        if not solver.valid(pre, thread["nctaid"]["cand"][i] == thread["nctaid"]["ref"][i]):
            raise NotProved("the grids are different functions of the sizes; only the identity thread "
                            "correspondence is tried")
    cnames, rnames = buffer_names(cand, ref)
    rc = Run(cand, cnames, sizes, thread, solver, pre, "cand")
    rc.side_template_args = dict(cand_t.get("args") or {})
    rr = Run(ref, rnames, sizes, thread, solver, pre, "ref")
    rr.side_template_args = dict(ref_t.get("args") or {})
    prove_all_sizes.last_solver = solver
    rc.run()
    rr.run()
    loaded = set(rc.loads) | set(rr.loads)
    for r in (rc, rr):
        if len(r.gstores) != 1:
            raise NotProved(f"{r.side.path}: {len(r.gstores)} global store sites; the argument covers one "
                            f"output store per thread")
    sc, sr = rc.gstores[0], rr.gstores[0]
    if sc.buf != sr.buf:
        raise NotProved(f"the kernels store to different buffers ({sc.buf}, {sr.buf})")
    if sc.buf in loaded:
        raise NotProved(f"output buffer {sc.buf} is also read")
    hyps = mk_and(rc.hyps, rr.hyps)
    what = f"{sc.buf} (candidate {rc.where(sc.instr)}, reference {rr.where(sr.instr)})"
    if not solver.valid(hyps, sc.pc == sr.pc):
        raise NotProved(f"{what}: the threads that store differ", mk_and(hyps, sc.pc != sr.pc))
    h = mk_and(hyps, sc.pc)
    if not solver.valid(h, sc.addr == sr.addr):
        raise NotProved(f"{what}: a thread stores to different addresses", mk_and(h, sc.addr != sr.addr))
    _check_kinds(sc.val, "candidate's")
    _check_kinds(sr.val, "reference's")
    match_monomials(list(sc.val.values()), list(sr.val.values()), h, solver, what)
    scope = f"for all {', '.join(names)} >= 1 with {text.replace(';', ',')}"
    fixed = [t.get("grid") for t in (cand_t, ref_t) if all(isinstance(x, int) for x in (t.get("grid") or [1, 1, 1]))]
    if fixed:  # the grid does not follow the sizes: the claim is for this grid only
        scope += f" (at the fixed grid {tuple(fixed[0] or (1, 1, 1))})"
    return scope, {"names": names, "queries": solver.queries, "precondition": text}


def failing_sizes(witness, names, solver, unit, limit=80):
    """Sizes where ``witness`` holds, smallest work first: multiples of ``unit`` (up to 16 of
    them per size) in order of their product, each checked by z3 at those fixed values (at
    most ``limit`` checks); then the smallest model z3 finds by itself."""
    combos = sorted(itertools.product(range(1, 17), repeat=len(names)), key=lambda c: (math.prod(c), c))
    found = []
    for c in combos[:limit]:
        sizes = {n: unit * m for n, m in zip(names, c)}
        r, _ = solver.check(witness, *[BV(n, 32) == v for n, v in sizes.items()])
        if r == z3.sat:
            found.append(sizes)
            yield sizes
    if not found:
        s = smallest_sizes(witness, names, solver)
        if s is not None:
            yield s


def smallest_sizes(witness, names, solver, caps=(16, 64, 256, 1024, 4096), order=None):
    """Sizes of a model of ``witness``, each at most the smallest cap that admits one (then
    each size lowered while a model remains), or ``None``."""
    vs = {n: BV(n, 32) for n in names}
    for cap in caps:
        bound = [z3.ULE(v, cap) for v in vs.values()]
        r, m = solver.check(witness, *bound)
        if r != z3.sat:
            continue
        sizes = {n: m.eval(v, model_completion=True).as_long() for n, v in vs.items()}
        for n in order or names:  # lower each size while the others stay
            fixed = [vs[o] == sizes[o] for o in names if o != n]
            r2, m2 = solver.check(witness, *fixed, z3.ULT(vs[n], sizes[n]), *bound)
            while r2 == z3.sat:
                sizes[n] = m2.eval(vs[n], model_completion=True).as_long()
                r2, m2 = solver.check(witness, *fixed, z3.ULT(vs[n], sizes[n]), *bound)
        return sizes
    return None


# --------------------------------------------------------------------------- the verdict
ASSUMES = ("both kernels are free of data races (kverify check establishes this) and their accesses stay "
           "inside the buffer their pointer comes from (buffers do not overlap); threads run barrier interval "
           "by barrier interval")
REAL = ("real model: floats are reals; rounding, .ftz and the error of approximate instructions are abstracted; "
        "inputs are finite")
MAX_CONCRETE_WORK = 1 << 22  # product of the sizes of a concrete re-check of a failed step
PROBE_RUNS = 6  # concrete checks when a loop is not summarized


def check_all_sizes(cand_file, ref_file, launch, ref_launch, kernel, ref_kernel, precondition=None,
                    model="real", timeout_s=20.0, cex_dir=None, test_examples=8, seed=0, cm=None, rm=None):
    """The all-sizes verdict as an ``EquivResult``: ``proved`` (scope ``for all ...``),
    ``refuted`` (a failed step whose smallest sizes the concrete check refutes, with that
    counterexample) or ``unknown`` (the step that failed)."""
    from kverify.launch.resolve import is_manifest

    from . import load_side
    from .engine import EquivResult, check_pair

    t0 = time.perf_counter()
    assumptions = [ASSUMES, REAL]
    if model != "real":
        return EquivResult("unknown", model, f"the all-sizes argument is implemented for the real model only "
                           f"(got {model})", time_s=time.perf_counter() - t0, assumptions=assumptions,
                           scope="all sizes: not attempted")
    rl = ref_launch or (launch if not is_manifest(launch) else None)
    cand_t = _template(launch, cand_file, kernel)
    ref_t = _template(rl, ref_file, ref_kernel)
    cand = load_side(cand_file, launch, {}, kernel, cm)
    ref = load_side(ref_file, rl, {}, ref_kernel, rm)
    try:
        scope, info = prove_all_sizes(cand, ref, cand_t, ref_t, precondition, timeout_s)
        res = EquivResult("proved", model, f"proved {scope}: each kernel's accumulation loop summarized by "
                          f"induction, shared-memory reads resolved to their writer thread for every thread, "
                          f"the same output address and value for every thread ({info['queries']} z3 queries)",
                          time_s=time.perf_counter() - t0, assumptions=assumptions + [
                              "sizes are int32 launch arguments with every buffer's element count below 2^31 "
                              "and gridDim.x < 2^31, gridDim.y, gridDim.z <= 65535"], scope=scope)
        res.solver = info["queries"]
        return res
    except NotProved as e:
        reason = str(e)
        witness = e.witness
        probe = e.probe
    except KernelError:
        raise
    except Exception as e:  # noqa: BLE001 - fail closed: an unforeseen form is unknown, never a crash
        reason = f"the argument stopped on a form it does not take ({type(e).__name__}: {e})"
        witness, probe = None, False
    solver = getattr(prove_all_sizes, "last_solver", None)
    names = sorted({k for t in (cand_t, ref_t) for k, v in (t.get("args") or {}).items()
                    if isinstance(v, int) and not isinstance(v, bool)})
    msg = f"not proved for all sizes: {reason}"
    if (witness is None or solver is None or solver.full is None) and probe and solver is not None \
            and solver.full is not None:
        # a loop the argument cannot summarize: grow one size at a time (multiples of the block
        # width, the precondition holding), at most PROBE_RUNS concrete checks
        unit = int(cand.spec.block[0])
        said = []
        for n in names:
            for m in range(2, 7):
                if len(said) >= PROBE_RUNS:
                    break
                sizes = {o: unit * (m if o == n else 1) for o in names}
                r, _ = solver.check(solver.PRE, *[BV(o, 32) == v for o, v in sizes.items()])
                if r != z3.sat:
                    continue
                shape = ", ".join(f"{k}={v}" for k, v in sizes.items())
                conc = check_pair(load_side(cand_file, launch, sizes, kernel, cm),
                                  load_side(ref_file, rl, sizes, ref_kernel, rm),
                                  model, timeout_s, cex_dir, test_examples, seed, test_on_unknown=False)
                said.append(f"{shape}: {conc.verdict}")
                if conc.verdict == "refuted":
                    conc.message = f"refuted at {shape} (the all-sizes argument fails: {reason}): {conc.message}"
                    conc.scope = f"all sizes: refuted at {shape}"
                    conc.time_s = time.perf_counter() - t0
                    conc.counterexample = dict(conc.counterexample or {}, shape=sizes)
                    return conc
        msg += "; sizes run concretely: " + "; ".join(said)
    if witness is None or solver is None or solver.full is None:
        return EquivResult("unknown", model, msg, time_s=time.perf_counter() - t0, assumptions=assumptions,
                           scope="all sizes: not proved")
    tried = []
    for sizes in failing_sizes(witness, names, solver, int(cand.spec.block[0])):
        shape = ", ".join(f"{k}={v}" for k, v in sizes.items())
        if math.prod(max(1, v) for v in sizes.values()) > MAX_CONCRETE_WORK:
            tried.append(sizes)
            break
        c2 = load_side(cand_file, launch, sizes, kernel, cm)
        r2 = load_side(ref_file, rl, sizes, ref_kernel, rm)
        conc = check_pair(c2, r2, model, timeout_s, cex_dir, test_examples, seed, test_on_unknown=False)
        if conc.verdict == "refuted":
            conc.message = (f"refuted at {shape} (where the all-sizes argument fails: {reason}): {conc.message}")
            conc.scope = f"all sizes: refuted at {shape}"
            conc.time_s = time.perf_counter() - t0
            conc.counterexample = dict(conc.counterexample or {}, shape=sizes)
            return conc
        tried.append(dict(sizes, verdict=conc.verdict))
        if conc.verdict == "proved" or len(tried) >= 3:
            break
    if not tried:
        return EquivResult("unknown", model, msg + "; no sizes found where the step fails",
                           time_s=time.perf_counter() - t0, assumptions=assumptions, scope="all sizes: not proved")
    said = "; ".join(", ".join(f"{k}={v}" for k, v in t.items() if k != "verdict") +
                     (f": the concrete check says {t['verdict']}" if "verdict" in t else ": too large to run")
                     for t in tried)
    return EquivResult("unknown", model, msg + f"; sizes where the step fails: {said}",
                       time_s=time.perf_counter() - t0, assumptions=assumptions, scope="all sizes: not proved")

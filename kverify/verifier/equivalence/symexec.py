"""Symbolic execution of one concrete launch: every thread of every CTA runs the
structured IR with concrete thread/block ids and scalar parameters and symbolic input
buffer contents; the result is, for each output element, a term over the inputs.

Execution order. CTAs run one after another (they share only global memory; for a
race-free kernel the order does not matter). Inside a CTA every thread runs until it
blocks — at a CTA/named barrier, a warp collective (``shfl``/``vote``/``elect``/
``redux``/``activemask``/``match``) or an ``mbarrier`` wait — then collectives are performed per
warp and barriers released, barrier interval by barrier interval. This is exact for
kernels free of data races (``kverify check`` establishes race freedom); every verdict
states the assumption.

Asynchronous copies (``cp.async``, ``cp.async.bulk``) are performed when issued; for a
race-free kernel nobody reads the destination before the matching wait and nobody writes
the source meanwhile, so completing early gives the same values. ``mbarrier`` objects
keep pending arrivals, the transaction count and the phase (PTX ISA §9.7.13.15); a
parity wait returns once the phase with that parity completed.

The carry flag CC.CF of ``add.cc``/``addc``... (PTX ISA §9.7.2) is per-thread state, as in
the interpreter (``kverify.semantics.interpreter.ops.CARRY``); the ``real`` model has no carry.

Memory is a map from byte address to the stored value (and the store's source line);
loads of exactly one stored value return it, other loads are assembled from bytes.
Unwritten global memory holds the input variables ``<buffer>[<index>]``; unwritten
shared/local memory a fresh variable per kernel (so reading it never proves anything).

Control flow and addresses must be concrete. A branch, guard or address that depends on
symbolic data stops the run with :class:`DataDependent`; an instruction outside the
supported set with :class:`Unsupported`. Both become ``unknown`` with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kverify.launch import arg_bits, dtypes, lookup, param_key, param_offsets
from kverify.launch.layout import (CTA_MASK, GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE,
                                   align_up, next_buffer)
from kverify.semantics.interpreter.ops import CARRY, CARRY_IN, CARRY_OUT
from kverify.semantics.ir.nodes import (Addr, Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg, PairOp, Reg,
                                Sink, Sym, VecOp)
from kverify.semantics.ir.errors import Unsupported  # noqa: F401  (re-exported)
from kverify.semantics.ir.optable import collective_of, flow_of, operand_bits, sync_of
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.ir.visit import RegisterWidths
from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.semantics.values import FAMILIES, source_bits
from kverify.semantics.values.collectives import shfl_source

from .algebra import DataDependent, ModelUnsupported, is_concrete

class Budget(Exception):
    pass


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


@dataclass
class Thread:
    cta: object
    linear: int
    tid: tuple
    regs: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)
    done: bool = False
    event: object = None
    resume: object = None
    gen: object = None


class CTAState:
    def __init__(self, ctaid):
        self.ctaid = ctaid
        self.smem: dict = {}
        self.mbars: dict = {}
        self.threads: list = []
        self.bar_arrived: dict = {}


class MbarState:
    """An mbarrier of the walk: the mbarrier protocol's state, changed only by its step. A
    violation the protocol does not run on past stops the walk (``Unsupported``)."""

    __slots__ = ("state",)

    def __init__(self):
        self.state = MB.MbarrierState()

    @property
    def phase(self):
        return self.state.phase

    def step(self, cmd, ins):
        out = MB.step(self.state, cmd)
        if out.violation is not None:
            v, out = MB.run_on(self.state, cmd, out.violation)
            if out is None:
                raise Unsupported(f"{v.rule}: {v.message} ({v.section})", ins)
        self.state = out.state
        return out


SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry",
          "param::func", "const")


def space_of(ins):
    for mo in ins.mods:
        if mo in SPACES:
            return mo
    return None


class Executor:
    """Runs one kernel for one launch over an algebra (see :mod:`algebra`)."""

    def __init__(self, module, kernel, spec, algebra, names: dict, tag: str, max_steps: int = 5_000_000):
        """``names`` maps this kernel's buffer parameter keys to the variable names shared
        with the other kernel; ``tag`` distinguishes this kernel's fresh variables."""
        self.module, self.kernel, self.spec, self.alg = module, kernel, spec, algebra
        self.tag = tag
        self.max_steps = max_steps
        self.steps = 0
        self.gmem: dict = {}
        self.reg_width = RegisterWidths(module)
        self.funcs = {k.name: k for k in module.kernels}
        self._dec = {}
        self._layout(names)
        self.handlers = {}
        for name, row in __import__("kverify.semantics.ir.optable", fromlist=["OPS"]).OPS.items():
            h = handler_name(row)
            if h is not None:
                self.handlers[name] = getattr(self, h)

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
            off = next_buffer(off, buf.nbytes)
        by_key = {b.param: b for b in self.buffers}
        self.param_bytes = {}
        offsets, _ = param_offsets(kernel)
        self.param_off = {name: o for name, (o, _) in offsets.items()}
        for i, p in enumerate(kernel.params):
            poff = self.param_off[p.name]
            key = param_key(kernel, i)
            if p.array:
                raise Unsupported(f"by-value array parameter {key} (tensor maps are not supported)")
            if key in by_key:
                value = by_key[key].start
            else:
                v = lookup(spec.args, kernel, i)
                if v is None:
                    raise Unsupported(f"launch spec: no value for parameter {key}")
                value = arg_bits(v, p.type.name)
            size = p.size
            value &= (1 << (8 * size)) - 1
            for j in range(size):
                self.param_bytes[poff + j] = (value >> (8 * j)) & 0xFF
        self.smem_vars = {}
        soff = 0
        dyn = []
        for v in list(self.module.vars) + list(kernel.vars):
            if v.space != "shared":
                continue
            if v.extern:
                dyn.append(v)
                continue
            soff = align_up(soff, v.align or max(v.type.bits // 8, 1))
            self.smem_vars[v.name] = soff
            soff += v.size
        if dyn:
            soff = align_up(soff, 1024)
            for v in dyn:
                self.smem_vars[v.name] = soff
        self.local_vars = {}
        loff = 0
        for v in kernel.vars:
            if v.space == "local":
                loff = align_up(loff, v.align or 8)
                self.local_vars[v.name] = loff
                loff += v.size
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
                        for k in range(esz):
                            self.const_bytes[coff + j * esz + k] = (int(x) >> (8 * k)) & 0xFF
                coff += v.size
        for v in self.module.vars:
            if v.space == "global":
                raise Unsupported(f"module-scope .global variable {v.name}")

    def buffer_at(self, addr):
        for b in self.buffers:
            if b.start <= addr < b.start + b.nbytes:
                return b
        return None

    # ------------------------------------------------------------------ run
    def run(self):
        gx, gy, gz = self.spec.grid
        if self.spec.cluster != (1, 1, 1):
            raise Unsupported("thread-block clusters")
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    self._run_cta(CTAState((x, y, z)))
        return self

    def _run_cta(self, cta):
        bx, by, bz = self.spec.block
        n = bx * by * bz
        for t in range(n):
            th = Thread(cta, t, (t % bx, (t // bx) % by, t // (bx * by)))
            th.gen = self._thread_main(th)
            cta.threads.append(th)
        runnable = list(cta.threads)
        warps = [cta.threads[i:i + 32] for i in range(0, n, 32)]
        while True:
            for th in runnable:
                try:
                    th.event = th.gen.send(th.resume)
                except StopIteration:
                    th.done = True
                    th.event = None
                th.resume = None
            runnable = []
            live = [t for t in cta.threads if not t.done]
            if not live:
                return
            # warp collectives: once every live thread of the warp is blocked
            for w in warps:
                groups = {}
                for t in w:
                    if not t.done and t.event[0] == "coll":
                        groups.setdefault(id(t.event[1]), []).append(t)
                for members in groups.values():
                    self._collective(members)
                    runnable.extend(members)
            if runnable:
                continue
            # mbarrier waits
            for t in live:
                if t.event[0] == "mbar":
                    st, parity = t.event[1], t.event[2]
                    if st.phase % 2 != parity or (st.phase >= 2 and st.phase % 2 == parity and False):
                        runnable.append(t)
            if runnable:
                continue
            # barriers
            byid = {}
            for t in live:
                if t.event[0] == "bar":
                    byid.setdefault(t.event[1], []).append(t)
            for bid, ts in byid.items():
                need = ts[0].event[2] or len(live)
                arrived = len(ts) + cta.bar_arrived.get(bid, 0)
                if arrived >= need:
                    cta.bar_arrived[bid] = 0
                    runnable.extend(ts)
            if not runnable:
                waits = sorted({f"{t.event[0]} at {_loc(t.event[-1])}" for t in live})
                raise Unsupported(f"no thread of CTA {cta.ctaid} can proceed (deadlock or an unsupported "
                                  f"synchronization pattern): {'; '.join(waits[:4])}")

    def _thread_main(self, t):
        yield from self.exec_stmts(t, self.kernel.body)

    # ------------------------------------------------------------------ statements
    def exec_stmts(self, t, stmts):
        for s in stmts:
            ty = type(s)
            if ty is Instr:
                if s.guard is not None:
                    g = self.pred(t, s.guard.reg)
                    g = self.alg.truth(g, f"the guard of {s.opcode} at {_loc(s)}")
                    if g == s.guard.negated:
                        continue
                self.steps += 1
                if self.steps > self.max_steps:
                    raise Budget(f"step budget of {self.max_steps} thread-instructions exhausted")
                h = self.handlers.get(s.op)
                if h is None or not s.supported:
                    raise Unsupported(f"unsupported instruction {s.opcode}", s)
                try:
                    r = h(t, s)
                except (DataDependent, ModelUnsupported) as e:
                    if not getattr(e, "located", False):
                        e.args = (f"{e.args[0] if e.args else e} at {_loc(s)} ({s.opcode})",)
                        e.located = True
                    raise
                if r is not None:
                    if r == "exit":
                        return "exit"
                    sig = yield from r
                    if sig == "exit":
                        return "exit"
            elif ty is If:
                c = self.alg.truth(self.pred(t, s.cond), f"the branch at {_loc(s)}")
                if s.negated:
                    c = not c
                body = s.then if c else s.orelse
                if body:
                    sig = yield from self.exec_stmts(t, body)
                    if sig is not None:
                        return sig
            elif ty is Loop:
                while True:
                    sig = yield from self.exec_stmts(t, s.body)
                    if sig is None:
                        break
                    if sig == ("continue", s.label):
                        continue
                    if sig == ("break", s.label):
                        break
                    return sig
            elif ty is Block:
                sig = yield from self.exec_stmts(t, s.body)
                if sig is not None and sig != ("break", s.label):
                    return sig
            elif ty is Break:
                return ("break", s.label)
            elif ty is Continue:
                return ("continue", s.label)
        return None

    # ------------------------------------------------------------------ registers
    def reg(self, t, name):
        v = t.regs.get(name)
        if v is not None:
            return v
        base, _, comp = name.partition(".")
        if base in SPECIAL:
            return SPECIAL[base](self, t, comp)
        return False if self.reg_width(name) == 1 else 0

    def pred(self, t, r):
        v = self.reg(t, r.name)
        if type(v) is int:
            return v != 0
        return v

    def val(self, t, op, bits=64):
        ty = type(op)
        if ty is Reg:
            return self.alg.fit(self.reg(t, op.name), bits) if bits != 1 else self.reg(t, op.name)
        if ty is Imm:
            return op.value & ((1 << bits) - 1)
        if ty is FImm:
            if bits == 64 and op.width == 32:
                import struct
                return struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", op.bits))[0]))[0]
            if bits == 32 and op.width == 64:
                import struct
                return struct.unpack("<I", struct.pack("<f", struct.unpack("<d", struct.pack("<Q", op.bits))[0]))[0]
            return op.bits
        if ty is Neg:
            return self.alg.pnot(self.pred(t, op.reg))
        if ty is Sym:
            return (self.symbol_address(op.name) + op.offset) & ((1 << bits) - 1)
        raise Unsupported(f"operand {op} is not a value")

    def write(self, t, dst, value):
        ty = type(dst)
        if ty is Sink:
            return
        if ty is not Reg:
            raise Unsupported(f"destination {dst} is not a register")
        w = self.reg_width(dst.name)
        if w == 1:
            if type(value) is int:
                value = value != 0
            t.regs[dst.name] = value
            return
        if type(value) is bool:
            value = int(value)
        t.regs[dst.name] = self.alg.fit(value, w)

    def symbol_address(self, name):
        if name in self.smem_vars:
            return self.smem_vars[name]
        if name in self.param_off:
            return PARAM_WINDOW + self.param_off[name]
        if name in self.local_vars:  # the address in the local state space (cvta.local makes it generic)
            return self.local_vars[name]
        if name in self.const_vars:
            return self.const_vars[name]
        raise Unsupported(f"unknown symbol {name}")

    def addr(self, t, a: Addr) -> int:
        if a.base is None:
            return a.offset
        if isinstance(a.base, Sym):
            return self.symbol_address(a.base.name) + a.base.offset + a.offset
        v = self.reg(t, a.base.name)
        if not is_concrete(v):
            raise DataDependent(f"the address [{a}] depends on input data")
        return int(v) + a.offset

    # ------------------------------------------------------------------ memory
    def _region(self, t, space, addr):
        """(store dict, key address, kind) for an access."""
        if space in (None, "generic"):
            if SHARED_WINDOW <= addr < SHARED_WINDOW + WINDOW_SIZE:
                return self._region(t, "shared", addr - SHARED_WINDOW)
            if LOCAL_WINDOW <= addr < LOCAL_WINDOW + WINDOW_SIZE:
                return t.local, addr - LOCAL_WINDOW, "local"
            if PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_SIZE:
                return None, addr - PARAM_WINDOW, "param"
            return self.gmem, addr, "global"
        if space == "global":
            return self.gmem, addr, "global"
        if space.startswith("shared"):
            if addr >> 24:
                raise Unsupported("distributed shared memory (shared::cluster addresses of other CTAs)")
            return t.cta.smem, addr & CTA_MASK, "shared"
        if space == "local":
            return t.local, addr - LOCAL_WINDOW if addr >= LOCAL_WINDOW else addr, "local"
        if space.startswith("param"):
            return None, addr - PARAM_WINDOW if addr >= PARAM_WINDOW else addr, "param"
        if space == "const":
            return None, addr, "const"
        raise Unsupported(f"state space {space}")

    def load(self, t, space, addr, n, ins=None):
        store, a, kind = self._region(t, space, addr)
        if kind in ("param", "const"):
            src = self.param_bytes if kind == "param" else self.const_bytes
            v = 0
            for j in range(n):
                b = src.get(a + j)
                if b is None:
                    raise Unsupported(f"{kind} load outside the known {kind} bytes", ins)
                v |= b << (8 * j)
            return v
        e = store.get(a)
        if e is not None and e[0] == n:
            return e[1]
        return self._assemble(store, a, n, kind, t)

    def _assemble(self, store, a, n, kind, t):
        pieces = []
        j = 0
        while j < n:
            b = a + j
            found = None
            for k in range(0, 16):
                e = store.get(b - k)
                if e is not None and e[0] > k:
                    found = (b - k, e)
                    break
            if found is not None:
                start, (sz, v, _loc_) = found
                lo = b - start
                take = min(sz - lo, n - j)
                pieces.append((self.alg.extract_bytes(v, lo, take, sz), take))
                j += take
                continue
            # unwritten: input variables (global) or fresh variables
            if kind == "global":
                buf = self.buffer_at(b)
                if buf is None:
                    raise Unsupported(f"global load at {b:#x} outside every buffer")
                idx = (b - buf.start) // buf.esize
                es = buf.start + idx * buf.esize
                v = self.initial(buf, idx)
                lo = b - es
                take = min(buf.esize - lo, n - j)
                pieces.append((self.alg.extract_bytes(v, lo, take, buf.esize), take))
                j += take
                continue
            where = f"cta{t.cta.ctaid}" if kind == "shared" else f"t{t.linear}.cta{t.cta.ctaid}"
            v = self.alg.fresh(f"uninit.{self.tag}.{kind}.{where}.{b}", 8)
            pieces.append((v, 1))
            j += 1
        if len(pieces) == 1:
            return pieces[0][0]
        return self.alg.concat_bytes(pieces)

    def initial(self, buf, idx):
        return self.alg.input_value(f"{buf.name}[{idx}]", buf.dtype, 8 * buf.esize)

    def store(self, t, space, addr, n, value, loc):
        store, a, kind = self._region(t, space, addr)
        if kind in ("param", "const"):
            raise Unsupported(f"store to {kind} space")
        if kind == "global" and self.buffer_at(a) is None:
            raise Unsupported(f"global store at {a:#x} outside every buffer (out of bounds)")
        self._clear(store, a, n, kind, t)
        store[a] = (n, value, loc)

    def _clear(self, store, a, n, kind, t):
        """Remove or split stored values that overlap ``[a, a+n)``."""
        for k in range(1, 16):
            e = store.get(a - k)
            if e is not None and e[0] > k:
                sz, v, lc = e
                del store[a - k]
                for j in range(sz):
                    b = a - k + j
                    if a <= b < a + n:
                        continue
                    store[b] = (1, self.alg.extract_bytes(v, j, 1, sz), lc)
        for j in range(0, n):
            e = store.get(a + j)
            if e is None:
                continue
            sz, v, lc = e
            del store[a + j]
            if j + sz > n:
                for q in range(n - j, sz):
                    store[a + j + q] = (1, self.alg.extract_bytes(v, q, 1, sz), lc)

    def output_terms(self):
        """{buffer name: [(term, store loc or None) per element]} for the launch's outputs
        (all buffers when the spec names none)."""
        outs = set(self.spec.outputs)
        res = {}
        for b in self.buffers:
            if outs and b.param not in outs:
                continue
            vals = []
            for i in range(b.count):
                a = b.start + i * b.esize
                e = self.gmem.get(a)
                if e is not None and e[0] == b.esize:
                    vals.append((e[1], e[2]))
                else:
                    v = self._assemble(self.gmem, a, b.esize, "global", None)
                    loc = None
                    for k in range(b.esize):
                        for kk in range(16):
                            ee = self.gmem.get(a + k - kk)
                            if ee is not None and ee[0] > kk:
                                loc = ee[2]
                                break
                        if loc:
                            break
                    vals.append((v, loc))
            res[b.name] = vals
        return res

    # ------------------------------------------------------------------ handlers
    def _decode(self, ins):
        d = self._dec.get(id(ins))
        if d is None:
            fam = ins.row.semantics
            tys = ins.types()
            if not tys:
                raise Unsupported(f"{ins.opcode}: no type", ins)
            ty = ((tys[0], tys[1]) if len(tys) > 1 else (tys[0], tys[0])) if fam in ("cvt", "set", "slct") \
                else tys[0]
            mods = frozenset(m for m in ins.mods if m not in SCALAR_BITS)
            widths = [source_bits(fam, ty, mods, i) for i in range(len(ins.operands) - 1)]
            d = self._dec[id(ins)] = (fam, ty, mods, widths, (ins, tys))
        return d

    def h_value(self, t, ins):
        fam, ty, mods, widths0, _keep = self._decode(ins)
        ops = ins.operands
        if ty == "pred" and fam in ("and", "or", "xor", "not", "mov"):
            vals = [self.pred(t, o) if isinstance(o, Reg) else (self.val(t, o, 1) if isinstance(o, Neg)
                                                                 else bool(o.value)) for o in ops[1:]]
            if all(type(v) is bool for v in vals):
                r = {"and": lambda a, b: a and b, "or": lambda a, b: a or b, "xor": lambda a, b: a != b,
                     "not": lambda a: not a, "mov": lambda a: a}[fam](*vals)
            else:
                r = self.alg.family(fam, "pred", mods, vals, [1] * len(vals))
            self.write(t, ops[0], r)
            return None
        srcs = ops[1:]
        if fam == "mov" and isinstance(ops[0], VecOp):  # unpack
            w = SCALAR_BITS[ty]
            v = self.val(t, srcs[0], w)
            n = len(ops[0].elems)
            for j, e in enumerate(ops[0].elems):
                self.write(t, e, self.alg.extract_bytes(v, j * w // n // 8, w // n // 8, w // 8))
            return None
        if fam == "mov" and srcs and isinstance(srcs[0], VecOp):  # pack
            w = SCALAR_BITS[ty]
            n = len(srcs[0].elems)
            eb = w // n
            pieces = [(self.val(t, e, eb), eb // 8) for e in srcs[0].elems]
            self.write(t, ops[0], self.alg.concat_bytes(pieces))
            return None
        args, widths = [], []
        for i, o in enumerate(srcs):
            if i == 2 and operand_bits(ins, 3) == 1:  # selp/setp/set's predicate c
                args.append(self.pred(t, o) if isinstance(o, Reg) else self.val(t, o, 1))
                widths.append(1)
                continue
            if fam == "lop3" and i == 3:
                args.append(o.value & 0xFF)
                widths.append(8)
                continue
            w = widths0[i]
            args.append(self.val(t, o, w))
            widths.append(w)
        if fam in CARRY_IN:
            args.append(t.regs.get(CARRY, False))
            widths.append(1)
        r = self.alg.family(fam, ty, mods, args, widths)
        dst = ops[0]
        if "cc" in mods and fam in CARRY_OUT:  # (d, carry-out): the carry goes to CC.CF
            if not isinstance(r, tuple):
                raise ModelUnsupported(f"{ins.opcode}: the carry flag of integer arithmetic on real values "
                                       f"({self.alg.model} model)")
            r, t.regs[CARRY] = r
        if isinstance(r, tuple):
            if isinstance(dst, PairOp):
                self.write(t, dst.first, r[0])
                self.write(t, dst.second, r[1])
            else:
                self.write(t, dst, r[0])
            return None
        self.write(t, dst, r)
        return None

    def h_cvta(self, t, ins):
        sp = space_of(ins)
        a = self.val(t, ins.operands[1], 64)
        if not is_concrete(a):
            raise DataDependent("cvta of input data")
        to = "to" in ins.mods
        if sp == "global" or sp is None or sp == "const":
            r = a
        elif sp.startswith("shared"):
            r = a - SHARED_WINDOW if to else a + SHARED_WINDOW
        elif sp == "local":
            r = a - LOCAL_WINDOW if to else a + LOCAL_WINDOW
        elif sp.startswith("param"):
            r = a - PARAM_WINDOW if to else (a + PARAM_WINDOW if a < PARAM_WINDOW else a)
        else:
            raise Unsupported(f"cvta for {sp}", ins)
        self.write(t, ins.operands[0], r & ((1 << 64) - 1))

    def _elem_bytes(self, ins):
        d = self._dec.get(id(ins))
        if d is None:
            tys = ins.types()
            if not tys:
                raise Unsupported(f"{ins.opcode}: no type", ins)
            d = self._dec[id(ins)] = (tys[-1], max(SCALAR_BITS[tys[-1]] // 8, 1), ins)
        return d[0], d[1]

    def h_ld(self, t, ins):
        ty, nb = self._elem_bytes(ins)
        dst, a = ins.operands[0], ins.operands[1]
        space = space_of(ins)
        base = self.addr(t, a)
        elems = dst.elems if isinstance(dst, VecOp) else (dst,)
        for j, d in enumerate(elems):
            v = self.load(t, space, base + j * nb, nb, ins)
            if isinstance(d, Reg) and self.reg_width(d.name) > 8 * nb and ty.startswith("s"):
                v = self.alg.fit(v, 8 * nb)
                if type(v) is int:
                    if v >> (8 * nb - 1):
                        v -= 1 << (8 * nb)
                    v &= (1 << self.reg_width(d.name)) - 1
                else:
                    v = self.alg.fit(v, self.reg_width(d.name), signed=True)
            self.write(t, d, v)

    def h_st(self, t, ins):
        ty, nb = self._elem_bytes(ins)
        a, src = ins.operands[0], ins.operands[1]
        space = space_of(ins)
        base = self.addr(t, a)
        elems = src.elems if isinstance(src, VecOp) else (src,)
        for j, s in enumerate(elems):
            v = self.val(t, s, 8 * nb)
            self.store(t, space, base + j * nb, nb, v, ins.loc)

    def h_exit(self, t, ins):
        if flow_of(ins) == "return" and getattr(t, "frames", None):
            raise Unsupported("ret inside a called function", ins)
        return "exit"

    def h_nop(self, t, ins):
        return None

    def h_bar(self, t, ins):
        ops = ins.operands
        mods = set(ins.mods)
        if sync_of(ins) == "cluster.barrier":
            raise Unsupported("cluster barriers", ins)
        if "red" in mods:
            raise Unsupported("bar.red", ins)
        bid = self.val(t, ops[0], 32) if ops else 0
        count = self.val(t, ops[1], 32) if len(ops) > 1 else 0
        if not (is_concrete(bid) and is_concrete(count)):
            raise DataDependent("a barrier id or count depends on input data")
        if "arrive" in mods:
            t.cta.bar_arrived[bid] = t.cta.bar_arrived.get(bid, 0) + 1
            return None
        return self._block(("bar", bid, count, ins))

    def _block(self, event):
        def g():
            r = yield event
            return r
        return g()

    def h_coll(self, t, ins):
        ops = ins.operands
        vals = []
        for i, o in enumerate(ops):
            if i == 0 or isinstance(o, (PairOp, Sink)):
                vals.append(None)
            elif isinstance(o, (Reg, Imm, Neg, FImm)):
                w = operand_bits(ins, i) or 32
                vals.append(self.pred(t, o) if w == 1 and isinstance(o, Reg) else self.val(t, o, w))
            else:
                vals.append(None)
        return self._coll_gen(t, ins, vals)

    def _coll_gen(self, t, ins, vals):
        r = yield ("coll", ins, vals, t)
        dsts = ins.operands[0]
        outs = dsts if isinstance(dsts, tuple) else None
        if isinstance(dsts, PairOp):
            self.write(t, dsts.first, r[0])
            self.write(t, dsts.second, r[1])
        else:
            self.write(t, dsts, r[0] if isinstance(r, tuple) else r)
        return None

    def _collective(self, members):
        ins = members[0].event[1]
        lanes = {t.linear % 32: t for t in members}
        vals = {t.linear % 32: t.event[2] for t in members}
        coll = collective_of(ins)
        res = {}
        if coll == "shuffle":
            mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
            for lane, v in vals.items():
                b, c = v[2], v[3]
                if not (is_concrete(b) and is_concrete(c)):
                    raise DataDependent("a shfl lane operand depends on input data")
                j, ok = shfl_source(mode, lane, b, c)
                if j not in vals:
                    raise Unsupported(f"shfl reads lane {j}, which does not take part", ins)
                res[lane] = (vals[j][1], ok)
        elif coll == "vote":
            preds = {l: v[1] for l, v in vals.items()}
            if not all(type(p) is bool for p in preds.values()):
                raise DataDependent("a vote predicate depends on input data")
            ballot = sum(1 << l for l, p in preds.items() if p)
            kind = next(x for x in ins.mods if x in ("all", "any", "uni", "ballot"))
            r = {"all": all(preds.values()), "any": any(preds.values()),
                 "uni": len(set(preds.values())) == 1, "ballot": ballot}[kind]
            res = {l: r for l in vals}
        elif coll == "elect":
            leader = min(vals)
            res = {l: (leader, l == leader) for l in vals}
        elif coll == "activemask":
            m = sum(1 << l for l in vals)
            res = {l: m for l in vals}
        elif coll == "reduce":
            kind = next(x for x in ins.mods if x in ("add", "min", "max", "and", "or", "xor"))
            ty = ins.types()[-1]
            acc = None
            for l in sorted(vals):
                v = vals[l][1]
                acc = v if acc is None else self.alg.family(kind, ty, frozenset(), [acc, v], [32, 32])
            res = {l: acc for l in vals}
        elif coll == "match":  # §9.7.13 match.sync, as the interpreter's h_match
            mm = vals[min(vals)][2]
            if not all(is_concrete(v[1]) for v in vals.values()) or not is_concrete(mm):
                raise DataDependent("a match.sync operand depends on input data")
            act = {l: v[1] for l, v in vals.items() if (mm >> l) & 1}
            if "any" in ins.mods:
                res = {l: sum(1 << j for j, b in act.items() if b == v[1]) for l, v in vals.items()}
            else:
                equal = len(set(act.values())) <= 1
                d = sum(1 << j for j in act) if equal else 0
                res = {l: (d, equal) for l in vals}
        else:
            raise Unsupported(f"warp collective {ins.opcode}", ins)
        for l, t in lanes.items():
            t.resume = res[l]

    # async copies, completed at issue (exact for race-free kernels)
    def h_cp_async(self, t, ins):
        ops = ins.operands
        dst = self.addr(t, ops[0])
        src = self.addr(t, ops[1])
        size = self.val(t, ops[2], 32)
        src_size = self.val(t, ops[3], 32) if len(ops) > 3 and isinstance(ops[3], (Reg, Imm)) else size
        if not (is_concrete(size) and is_concrete(src_size)):
            raise DataDependent("a cp.async size depends on input data")
        for j in range(0, size, 4 if size % 4 == 0 else 1):
            step = 4 if size % 4 == 0 else 1
            if j < src_size:
                v = self.load(t, "global", src + j, step, ins)
            else:
                v = 0
            self.store(t, "shared", dst + j, step, v, ins.loc)

    def h_bulk(self, t, ins):
        ops = ins.operands
        mods = ins.mods
        dst = self.addr(t, ops[0])
        src = self.addr(t, ops[1])
        size = self.val(t, ops[2], 32)
        if not is_concrete(size):
            raise DataDependent("a bulk copy size depends on input data")
        dspace, sspace = [m for m in mods if m in SPACES][:2]
        step = 4 if size % 4 == 0 else 1
        for j in range(0, size, step):
            v = self.load(t, sspace, src + j, step, ins)
            self.store(t, dspace, dst + j, step, v, ins.loc)
        if "mbarrier::complete_tx::bytes" in mods:
            self._mbar(t, ops[3], ins).step(MB.CompleteTx(size), ins)

    def _mbar(self, t, op, ins):
        a = self.addr(t, op) if isinstance(op, Addr) else self.val(t, op, 64)
        if not is_concrete(a):
            raise DataDependent("an mbarrier address depends on input data")
        if a >= SHARED_WINDOW:
            a -= SHARED_WINDOW
        st = t.cta.mbars.get(a)
        if st is None:
            if sync_of(ins) != "mbarrier.init":
                raise Unsupported("use of an mbarrier before mbarrier.init", ins)
        return st

    def h_mbar_init(self, t, ins):
        a = self.addr(t, ins.operands[0])
        if a >= SHARED_WINDOW:
            a -= SHARED_WINDOW
        c = self.val(t, ins.operands[1], 32)
        if not is_concrete(c):
            raise DataDependent("an mbarrier count depends on input data")
        t.cta.mbars[a] = MbarState()
        t.cta.mbars[a].step(MB.Init(int(c)), ins)

    def h_mbar_arrive(self, t, ins):
        ops = ins.operands
        st = self._mbar(t, ops[1], ins)
        mods = ins.mods
        cnt, tx = 1, 0
        rest = ops[2:]
        if "expect_tx" in mods:
            tx = self.val(t, rest[0], 32)
            rest = rest[1:]
        if rest:
            cnt = self.val(t, rest[0], 32)
        if not is_concrete(cnt) or not is_concrete(tx):
            raise DataDependent("an mbarrier arrival count or tx-count depends on input data")
        out = st.step(MB.Arrive(count=int(cnt), expect_tx=int(tx), no_complete="noComplete" in mods,
                                drop=sync_of(ins) == "mbarrier.arrive_drop"), ins)
        if not isinstance(ops[0], Sink):
            self.write(t, ops[0], out.value if out.value is not None else st.phase)

    def h_mbar_tx(self, t, ins):
        st = self._mbar(t, ins.operands[0], ins)
        n = self.val(t, ins.operands[1], 32)
        if not is_concrete(n):
            raise DataDependent("an mbarrier tx-count depends on input data")
        st.step(MB.ExpectTx(int(n)) if sync_of(ins) == "mbarrier.expect_tx" else MB.CompleteTx(int(n)), ins)

    def h_mbar_wait(self, t, ins):
        ops = ins.operands
        st = self._mbar(t, ops[1], ins)
        if "parity" not in ins.mods:
            raise Unsupported("mbarrier waits with a state token (only the parity form)", ins)
        if not ins.blocking:
            raise Unsupported("a polling mbarrier.test_wait/try_wait outside a recognized retry loop", ins)
        parity = self.val(t, ops[2], 32) & 1
        if not is_concrete(parity):
            raise DataDependent("an mbarrier wait parity depends on input data")
        return self._mbar_wait_gen(t, ins, st, parity)

    def _mbar_wait_gen(self, t, ins, st, parity):
        if st.phase % 2 == parity:
            yield ("mbar", st, parity, ins)
        st.step(MB.TestWait(parity=int(parity)), ins)  # observes the completed phase
        if not isinstance(ins.operands[0], Sink):
            self.write(t, ins.operands[0], True)
        return None

    def h_call(self, t, ins):
        raise Unsupported("calls of device functions", ins)


#: Handlers chosen by a row's ``sync`` column (the synchronization effect it has).
SYNC_HANDLERS = {
    "bar": "h_bar", "cluster.barrier": "h_bar", "cp.async": "h_cp_async",
    "mbarrier.init": "h_mbar_init", "mbarrier.arrive": "h_mbar_arrive",
    "mbarrier.arrive_drop": "h_mbar_arrive", "mbarrier.expect_tx": "h_mbar_tx",
    "mbarrier.complete_tx": "h_mbar_tx", "mbarrier.wait": "h_mbar_wait",
    # effects with nothing to do for one thread's values (fences, group bookkeeping:
    # copies complete at issue)
    "bar.warp.sync": "h_nop", "fence": "h_nop", "fence.proxy.async": "h_nop",
    "fence.proxy.alias": "h_nop", "fence.mbarrier_init": "h_nop", "cp.async.commit": "h_nop",
    "cp.async.wait": "h_nop", "cp.async.wait_all": "h_nop", "bulk.commit": "h_nop",
    "bulk.wait": "h_nop", "griddepcontrol": "h_nop", "setmaxnreg": "h_nop",
}
COLLECTIVE_HANDLED = ("shuffle", "vote", "elect", "activemask", "reduce", "match")


def handler_name(row) -> str | None:
    """The method that executes instructions of an op-table row, from its columns; ``None``
    for a row this engine does not model."""
    if row.flow in ("return", "exit"):
        return "h_exit"
    if row.flow == "call":
        return "h_call"
    if row.collective in COLLECTIVE_HANDLED:
        return "h_coll"
    if row.semantics == "cvta":
        return "h_cvta"
    if row.semantics in FAMILIES:
        return "h_value"
    first = row.operands[0].access if row.operands else None
    if row.effect == "memory" and row.collective is None and row.semantics is None:
        return {"def": "h_ld", "store": "h_st"}.get(first)
    if row.sync == "bulk.copy" and first == "store" and any(s.name == "size" for s in row.operands):
        return "h_bulk"  # cp.async.bulk (not the tensor or reduce forms)
    if row.effect == "sync" or row.sync == "cp.async":  # not st.async / red.async
        return SYNC_HANDLERS.get(row.sync)
    if row.sync is not None:
        return None
    return "h_nop" if row.effect == "nop" else None


def _dim(v, comp):
    return v[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)]


SPECIAL = {
    "%tid": lambda e, t, c: _dim(t.tid, c),
    "%ntid": lambda e, t, c: _dim(e.spec.block, c),
    "%ctaid": lambda e, t, c: _dim(t.cta.ctaid, c),
    "%nctaid": lambda e, t, c: _dim(e.spec.grid, c),
    "%laneid": lambda e, t, c: t.linear % 32,
    "%warpid": lambda e, t, c: t.linear // 32,
    "%nwarpid": lambda e, t, c: 64,
    "%smid": lambda e, t, c: 0,
    "%nsmid": lambda e, t, c: 132,
    "%gridid": lambda e, t, c: 0,
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


from kverify.semantics.ir.nodes import where as _loc  # noqa: E402

"""The executor of the equivalence walk: runs the structured IR of one kernel for every
thread of every CTA of one launch (see the package docstring for the execution order), and
owns the thread and CTA state, the walk over statements (``If``/``Loop``/``Block``/
``Break``/``Continue``, PTX ISA 9.7.12), registers and operands, the control handlers
(``ret``/``exit``/``call``), and which handler runs the instructions of each op-table row
(``handler_name``, from the row's ``flow``/``collective``/``semantics``/``effect``/``sync``
columns).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kverify.launch.layout import PARAM_WINDOW
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import (Addr, Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg, ParenList, Reg,
                                         Sink, Sym)
from kverify.semantics.ir.nodes import where as _loc
from kverify.semantics.ir.optable import MAX_CALL_DEPTH, flow_of
from kverify.semantics.ir.visit import RegisterWidths
from kverify.semantics.interpreter.specials import TIMING_SPECIALS
from kverify.semantics.values import FAMILIES

from .. import folds as F
from ..algebra import DataDependent, ModelUnsupported, is_concrete
from .atomics import AtomicHandlers
from .barriers import BarrierHandlers
from .collectives import CollectiveHandlers
from .layout import SPECIAL, Layout
from .memory import Memory
from .tensorcore import TensorCoreHandlers, tensorcore_handler
from .predication import Predication
from .values import ValueHandlers

#: special registers whose value the hardware chooses: the run's (``TIMING_SPECIALS``), and per launch
#: or device %gridid and %nsmid (PTX ISA 10)
HARDWARE_SPECIALS = TIMING_SPECIALS | {"%nsmid", "%gridid", "%globaltimer_lo", "%globaltimer_hi"}


class Budget(Exception):
    pass


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
    pred: object = None  # the condition of the data-dependent branch being run (predication.py)
    params: dict = field(default_factory=dict)  # call-site / called-function .param: name -> {offset: (bytes, value)}
    frames: list = field(default_factory=list)  # the device functions being run (calls)


class CTAState:
    def __init__(self, ctaid):
        self.ctaid = ctaid
        self.smem: dict = {}
        self.mbars: dict = {}
        self.threads: list = []
        self.bar_arrived: dict = {}
        self.epoch = 0  # barrier releases so far (atomics.py: loads and atomics of one location)


class Executor(Layout, Memory, ValueHandlers, BarrierHandlers, CollectiveHandlers, TensorCoreHandlers, AtomicHandlers,
               Predication):
    """Runs one kernel for one launch over an algebra (see :mod:`algebra`)."""

    def __init__(self, module, kernel, spec, algebra, names: dict, tag: str, max_steps: int = 5_000_000):
        """``names`` maps this kernel's buffer parameter keys to the variable names shared
        with the other kernel; ``tag`` distinguishes this kernel's fresh variables."""
        self.module, self.kernel, self.spec, self.alg = module, kernel, spec, algebra
        self.tag = tag
        self.max_steps = max_steps
        self.steps = 0
        self.on_cta = None  # called with (k, n) before CTA k of n runs (progress)
        self.terms = None  # a terms.TermLog: the values produced per source line (kverify audit --ref)
        self.gmem: dict = {}
        self.read_only_loads: dict = {}  # buffer name -> (Buffer, first ld.global.nc/ldu of it)
        self.reg_width = RegisterWidths(module)
        self.funcs = {k.name: k for k in module.kernels}
        # .param storage of calls: call-site variables and device functions' parameters and returns
        self.call_params = {v.name for k in module.kernels for v in k.vars if v.space.startswith("param")} | {
            p.name for k in module.kernels if not k.is_entry for p in (*k.params, *k.rets)}
        self._dec = {}
        self._layout(names)
        self.handlers = {}
        for name, row in __import__("kverify.semantics.ir.optable", fromlist=["OPS"]).OPS.items():
            h = handler_name(row)
            if h is not None:
                self.handlers[name] = getattr(self, h)

    # ------------------------------------------------------------------ run
    def run(self):
        gx, gy, gz = self.spec.grid
        if self.spec.cluster != (1, 1, 1):
            raise Unsupported("thread-block clusters")
        n, k = gx * gy * gz, 0
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    k += 1
                    if self.on_cta is not None:
                        self.on_cta(k, n)
                    self._run_cta(CTAState((x, y, z)))
        self.check_read_only_loads()
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
            # warpgroup-wide wgmma.mma_async: once the four warps have issued it
            runnable.extend(self._wgmma_groups(cta, live))
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
                    cta.epoch += 1
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
                    what = f"the guard of {s.opcode} at {_loc(s)}"
                    if not is_concrete(g) and not isinstance(self.alg.truth_or_none(g), bool):
                        yield from self.exec_predicated(t, self.guarded_if(s), g, what)
                        continue
                    g = self.alg.truth(g, what)
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
                    if r in ("exit", "ret"):
                        return r
                    sig = yield from r
                    if sig == "exit":
                        return "exit"
            elif ty is If:
                c = self.pred(t, s.cond)
                what = f"the branch at {_loc(s)}"
                if not is_concrete(c) and not isinstance(self.alg.truth_or_none(c), bool):
                    yield from self.exec_predicated(t, s, c, what)
                    continue
                c = self.alg.truth(c, what)
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
            if type(v) is F.Select:
                v = t.regs[name] = F.force(v)
            return v
        base, _, comp = name.partition(".")
        if base in SPECIAL:
            return SPECIAL[base](self, t, comp)
        if base in HARDWARE_SPECIALS:  # (%smid read as 0 proved a + %smid equal to a)
            raise ModelUnsupported(f"{base}: which SM, warp slot or grid runs a thread is the hardware's, and "
                                   f"may differ from run to run (not modelled)")
        # a register no instruction wrote holds an undefined value (ptxas gives it whatever the
        # physical register holds): any value, the same on every read by this thread
        w = self.reg_width(name)
        if w == 1:
            raise ModelUnsupported(f"predicate {name} read before any instruction wrote it (its value is undefined)")
        v = t.regs[name] = self.alg.fresh(f"uninit.{self.tag}.t{t.linear}.cta{t.cta.ctaid}.{name}", w)
        return v

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
        if name in self.gvar_addr:
            return self.gvar_addr[name]
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

    # ------------------------------------------------------------------ control handlers
    def h_exit(self, t, ins):
        if flow_of(ins) == "return" and t.frames:
            return "ret"  # back to the call (h_call)
        return "exit"

    def h_nop(self, t, ins):
        return None

    def h_call(self, t, ins):
        """A direct call of a device function (PTX ISA §9.7.12.3 call): the callee runs in a frame
        of its own (fresh registers) with its parameters bound to the call-site ``.param``
        variables' contents and its returns copied back to the call site's after it returns."""
        rest = list(ins.operands)
        rets = rest.pop(0) if rest and isinstance(rest[0], ParenList) else None
        fn = rest.pop(0) if rest else None
        args = rest.pop(0).elems if rest and isinstance(rest[0], ParenList) else ()
        callee = self.funcs.get(fn.name) if isinstance(fn, Sym) else None
        if callee is None or callee.is_entry:
            raise Unsupported(f"call of {fn}: an indirect call or a function the module does not define", ins)
        if len(t.frames) >= MAX_CALL_DEPTH:
            raise Unsupported(f"call of {callee.name}: calls nested deeper than {MAX_CALL_DEPTH} (recursion) are not "
                              f"followed", ins)
        if len(args) != len(callee.params) or len(rets.elems if rets is not None else ()) != len(callee.rets):
            raise Unsupported(f"call of {callee.name}: arguments do not match its parameters", ins)
        frame = {p.name: dict(t.params.get(a.name, {})) for p, a in zip(callee.params, args)}
        frame.update({r.name: {} for r in callee.rets})
        return self._run_call(t, callee, frame, rets)

    def _run_call(self, t, callee, frame, rets):
        saved = t.regs, t.params
        t.regs, t.params = {}, frame
        t.frames.append(callee.name)
        sig = yield from self.exec_stmts(t, callee.body)
        t.frames.pop()
        t.regs, t.params = saved
        if sig == "exit":
            return "exit"
        for r, rv in zip(callee.rets, rets.elems if rets is not None else ()):
            t.params[rv.name] = dict(frame[r.name])
        return None

    def param_slot(self, t, a):
        """``(name, offset)`` when ``a`` addresses a call's ``.param`` storage, else ``None``."""
        if type(a) is Addr and type(a.base) is Sym and a.base.name in self.call_params:
            return a.base.name, a.offset + a.base.offset
        return None


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
    tc = tensorcore_handler(row)
    if tc is not None:
        return tc
    if row.flow == "call":
        return "h_call"
    if row.collective in COLLECTIVE_HANDLED:
        return "h_coll"
    if row.semantics == "cvta":
        return "h_cvta"
    if row.semantics == "atom":
        return "h_atom"
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

"""Calls in the symbolic per-thread engine: a call of a module function runs the callee's body
in place, in a frame of its own, under the call's path condition -- so every checker built on
the engine (the race checker's two threads, the static mbarrier sites, the assertions) sees the
callee's accesses, barriers and assertions as the caller's, at the callee's source lines.

- **Frames.** The callee starts with no registers of the caller (a function's registers are its
  own); its ``.param`` formals hold what the caller stored into the call's argument list, and
  after the call the caller's result ``.param`` variables hold what the callee stored into its
  return parameters. ``.param`` variables are kept as pseudo-registers ``name+offset`` of the
  state (one per stored piece, merged at joins like registers), so a by-value struct passes
  field by field and a pointer keeps its provenance (the buffer it points into).
- **ret** in a callee leaves the function (a pending state of the frame, merged at its end; inside
  a loop it leaves the loop as a ``break`` would); in the kernel it is ``exit``.
- **Indirect calls** (``call (r), %fptr, (a), proto;``): a pointer that constant-propagates to one
  function's address is a direct call of it. Otherwise the call is a dispatch over the functions
  the call may reach (address taken, the prototype's signature: ``visit.indirect_targets``), each
  run under the condition ``fptr == address(f)`` (``launch.layout.function_addresses``, the
  addresses the interpreter uses) -- as the structured ``brx.idx`` dispatch runs each target
  under its index. When the solver cannot rule out a pointer that is none of those addresses
  (null, an integer, a function of another signature), the call is undefined behaviour there:
  the obligations cannot be proved (the reason says so), and the path goes on with a valid
  pointer. Where the pointer may be no function's address at all, the site is recorded
  (``invalid_calls``: ``records.CallSite``) for ``verifier.calls``, which decides whether
  thread A reaches it with such a value (``call.invalid-target``).
- **Summaries** (``symbolic.extern``): a callee without a body that the user summarized as
  ``pure`` reads and writes no memory and does not synchronize; each of its result ``.param``
  variables receives a fresh value per call and per thread (an exact per-thread symbol, so a
  race or a divergence that needs some result is claimed; inside a loop an approximate one, since
  one symbol stands for every iteration's result).
- Not modelled, with a reason (the obligations are ``unknown``): recursion, calls nested deeper
  than ``MAX_DEPTH``, a callee without a body (``.extern``) and without a summary.

PTX ISA (9.0): §9.7.12.5 call (direct, and through a register with a ``.callprototype`` or a
``.calltargets`` list), §9.7.12.6 ret, §5.1.6 the ``.param`` state space (function arguments and
return values), §11.6.2 ``.callprototype``.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from kverify.semantics.ir.nodes import Addr, Instr, ParenList, Reg, Sym, VecOp, where
from kverify.semantics.ir.optable import space_of
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.ir.visit import callee_of, indirect_targets, prototype_of, walk

from .families import deref, handler
from .provenance import LOCAL
from .records import CallSite, State
from .terms import TRUE, fit, is_false, is_true, mk_and, mk_not, mk_or

MAX_DEPTH = 8  # calls nested deeper than this are not executed (unknown)
MAX_NUMBERED = 200_000  # instructions numbered in program order, callees once per calling context


@dataclass
class Frame:
    """A function being executed: the function, its calling context (the call instructions
    and callees from the kernel down, for program order) and its ``ret`` key."""

    fn: object
    ctx: tuple
    key: tuple  # the pending-states key of its returns


def call_lists(ins: Instr) -> tuple:
    """``(results, arguments)``: the ``.param`` names of a call's return list and argument list
    (§9.7.12.5: ``call (ret-list), target, (arg-list)[, proto]``)."""
    rest = list(ins.operands)
    rets = rest.pop(0).elems if rest and isinstance(rest[0], ParenList) else ()
    if rest:
        rest.pop(0)  # the callee: a function name or a register
    args = rest.pop(0).elems if rest and isinstance(rest[0], ParenList) else ()
    names = lambda xs: [getattr(x, "name", str(x)) for x in xs]
    return names(rets), names(args)


def body_of(module, name: str):
    """The module function (a ``.func`` with a body) called ``name``, or None."""
    return next((k for k in module.kernels if k.name == name and not k.is_entry), None)


class Calls:
    """Mixin of :class:`kverify.symbolic.executor.Executor`: calls (see the module docstring)."""

    # ------------------------------------------------------------------ program order
    def number_instructions(self):
        """Program order of every instruction the run may execute: the kernel's, and each
        callee's once per calling context (``seq_of``), as if the calls were inlined."""
        self.seq, self.seq_ctx = {}, {}
        self.numbered = {()}  # the calling contexts numbered (a call into another one is not run)
        n = 0

        def number(fn, stmts, ctx, stack):
            nonlocal n
            if n > MAX_NUMBERED:
                return
            self.numbered.add(ctx)
            for s, _ in walk(stmts):
                if not isinstance(s, Instr):
                    continue
                if ctx:
                    self.seq_ctx[(ctx, id(s))] = n
                else:
                    self.seq[id(s)] = n
                n += 1
                if handler(s) == "call" and len(stack) <= MAX_DEPTH:  # stack: the kernel and the frames
                    for callee in self.possible_callees(fn, s):
                        if callee.name not in stack:
                            number(callee, callee.body, ctx + ((id(s), callee.name),), stack + (callee.name,))

        number(self.kernel, self.kernel.body, (), (self.kernel.name,))

    def possible_callees(self, fn, ins: Instr) -> list:
        """The module functions a call of ``fn`` may run: the one it names, or the targets of a
        call through a register."""
        module = self.env.module
        if any(isinstance(o, Sym) for o in ins.operands):
            f = callee_of(module, ins)
            return [f] if f is not None and not f.is_entry else []
        return indirect_targets(module, fn, ins)

    def seq_of(self, ins: Instr) -> int:
        """The position of ``ins`` in program order, in the current calling context."""
        if not self.ctx:
            return self.seq.get(id(ins), -1)
        return self.seq_ctx.get((self.ctx, id(ins)), -1)

    def current_function(self):
        """The function whose body is being executed: the kernel, or the innermost callee."""
        return self.frames[-1].fn if self.frames else self.kernel

    # ------------------------------------------------------------------ call / ret
    def call(self, ins: Instr, st: State, guard) -> State:
        from kverify.semantics.ir import gpuverify as gv

        rets, _ = call_lists(ins)
        for r in rets:  # what the result variables held before is not the call's result
            self.forget_param(st, r)
        target = next((o for o in ins.operands if isinstance(o, Sym)), None)
        if target is not None and gv.is_marker(target.name) and callee_of(self.env.module, ins) is None:
            return self.marker_call(ins, st, guard, target.name)
        if target is not None:
            fn = body_of(self.env.module, target.name)
            if fn is None:
                kind = self.extern_summaries.get(target.name)
                if kind == "pure":
                    return self.pure_call(ins, st, guard, target.name)
                self.reason(f"call at {where(ins)}: callee {target.name} has no body in this module", ordering=True)
                self.forget_local(st)  # it may store to the thread's local memory
                return st
            return self.invoke(ins, st, guard, [(fn, TRUE)])
        return self.indirect(ins, st, guard)

    def summary_of(self, ins: Instr) -> str | None:
        """The user's summary (``symbolic.extern``) of the body-less function a direct call names,
        or None."""
        target = next((o for o in ins.operands if isinstance(o, Sym)), None)
        if target is None or target.name not in self.extern_summaries:
            return None
        return self.extern_summaries[target.name] if body_of(self.env.module, target.name) is None else None

    def pure_call(self, ins: Instr, st: State, guard, name: str) -> State:
        """A call of a body-less function summarized as ``pure`` (module docstring): no memory
        effect, no synchronization; each result variable gets a fresh value."""
        from kverify.names import demangle

        self.extern_used[name] = "pure"
        rets, _ = call_lists(ins)
        fn = self.current_function()
        short = demangle(name).split("(", 1)[0]
        for r in rets:
            bits = self.param_bits(fn, r)
            if bits is None:
                self.reason(f"call at {where(ins)}: the size of {demangle(name)}'s result {r} is not declared",
                            ordering=True)
                continue
            off = 0
            n = len(self.env.pairs)
            while off * 8 < bits:
                w = min(64, bits - off * 8)
                v = self.env.fresh(f"ext{n}.{short}.{off}", w, approx=bool(self.loop_stack))
                self.write(st, f"{r}+{off}", (v, None), guard)
                off += w // 8
        return st

    @staticmethod
    def param_bits(fn, name: str) -> int | None:
        """Bits of the ``.param`` variable ``name`` that function ``fn`` declares, or None."""
        for v in fn.vars:
            if v.name == name and v.space == "param" and hasattr(v.type, "bits"):
                n = 1
                for d in v.dims:
                    n *= d or 0
                return v.type.bits * n or None
        return None

    def indirect(self, ins: Instr, st: State, guard) -> State:
        """A call through a register: the fast path when the pointer is one constant, else the
        dispatch over the possible callees (module docstring)."""
        module = self.env.module
        fptr = next((o for o in ins.operands if isinstance(o, Reg)), None)
        caller = self.current_function()
        cands = indirect_targets(module, caller, ins)
        if fptr is None:
            self.reason(f"call at {where(ins)}: the callee operand is not understood", ordering=True)
            self.forget_local(st)
            return st
        term, region = self.read(st, fptr, 64)
        term = z3.simplify(fit(term, 64))
        if (region or "").startswith("param:"):  # a function pointer the host passes: no buffer
            self.call_target_params.add(region.split(":", 1)[1])
        if z3.is_bv_value(term):
            fn, why = self.function_at(term.as_long(), caller, ins, fptr)
            if fn is None:
                msg = f"call at {where(ins)}: {why}"
                self.reason(msg, ordering=True)
                if term.as_long() not in self.func_addr.values():  # no function at all (not a signature)
                    self.invalid_calls.append(CallSite(ins, mk_and(st.pc, guard), term, msg))
                self.forget_local(st)
                return st
            return self.invoke(ins, st, guard, [(fn, TRUE)])
        pc = mk_and(st.pc, guard)
        conds = [(f, term == z3.BitVecVal(self.func_addr[f.name], 64)) for f in cands]
        none = mk_and(pc, *[mk_not(c) for _, c in conds])
        r, _ = self.check(none)
        if r != "unsat":
            names = ", ".join(f.name for f in cands) or "none found"
            msg = (f"call at {where(ins)}: indirect call through {fptr}: the pointer may hold the address of "
                   f"none of the functions the call can reach (undefined behaviour; functions of the "
                   f"prototype's signature whose address is taken: {names})"
                   + (" (the solver could not decide)" if r == "unknown" else ""))
            self.reason(msg, ordering=True)
            # where it holds no function's address at all (not merely one of another signature, or
            # one whose address the module does not take): ``call.invalid-target``
            other = [term != z3.BitVecVal(a, 64) for n, a in self.func_addr.items()
                     if n not in {f.name for f in cands}]
            self.invalid_calls.append(CallSite(ins, mk_and(none, *other), term, msg))
        live = []
        for f, c in conds:
            r, _ = self.check(mk_and(pc, c))
            if r != "unsat":
                live.append((f, c))
        return self.invoke(ins, st, guard, live)

    def function_at(self, addr: int, caller, ins: Instr, fptr):
        """``(function, None)`` for the function at ``addr`` when its signature is the call's
        prototype; else ``(None, why)``."""
        name = {a: n for n, a in self.func_addr.items()}.get(addr)
        fn = body_of(self.env.module, name) if name is not None else None
        if fn is None:
            return None, f"indirect call through {fptr}: {addr:#x} is not the address of a function"
        proto = prototype_of(caller, ins)
        if proto is not None and not proto.matches(fn):
            return None, f"indirect call through {fptr}: {fn.name} does not have the signature of {proto.name}"
        return fn, None

    def invoke(self, ins: Instr, st: State, guard, targets) -> State:
        """Run each ``(function, condition)`` of ``targets`` under the call's path condition and
        its condition; join the outcomes (and the path where the guard is false). When they
        cover every path of the call (no thread exited or trapped in the callee, no pointer
        left out of a dispatch), the join keeps the path condition from before the call."""
        rets, args = call_lists(ins)
        pc0 = mk_and(st.pc, guard)
        outs = []
        if not is_true(guard):
            outs.append(State(mk_and(st.pc, mk_not(guard)), dict(st.regs), st.epoch, st.exited))
        carried = self.carried_regs()
        for fn, cond in targets:
            why = self.cannot_enter(fn, ins)
            pcf = mk_and(pc0, cond)
            if why is not None:
                self.reason(f"call at {where(ins)}: {why}", ordering=True)
                # what the callee would store to the thread's local memory is not known
                outs.append(State(pcf, {k: v for k, v in st.regs.items() if not k.startswith(LOCAL)}, st.epoch,
                                  st.exited))
                continue
            entry = {r: st.regs[r] for r in carried if r in st.regs}
            entry.update({k: v for k, v in st.regs.items() if k.startswith(LOCAL)})  # the thread's local memory
            for formal, actual in zip(fn.params, args):
                entry.update(self.param_pieces(st.regs, actual, formal.name))
            end = self.run_function(fn, ins, State(pcf, entry, st.epoch, st.exited))
            regs = self.keep_local(st.regs, end.regs, fn)
            for formal, actual in zip(fn.rets, rets):
                regs.update(self.param_pieces(end.regs, formal.name, actual))
            for r in carried:
                if r in end.regs:
                    regs[r] = end.regs[r]
            outs.append(State(end.pc, regs, end.epoch, end.exited))
        if not outs:  # no path goes on (each was undefined behaviour, with its reason)
            return st.dead()
        total = mk_or(*[s.pc for s in outs])
        pc = None
        if total.eq(st.pc) or (not is_false(total) and self._covers(total, st.pc)):
            pc = st.pc
        return self.merge(outs, pc=pc)

    def _covers(self, total, pc) -> bool:
        """Whether every path of ``pc`` is one of ``total`` (then the join keeps ``pc``)."""
        r, _ = self.check(mk_and(pc, mk_not(total)))
        return r == "unsat"

    def cannot_enter(self, fn, ins: Instr) -> str | None:
        """Why ``fn`` is not executed here (recursion, depth, a calling context outside the
        program order: more than ``MAX_NUMBERED`` instructions, or a pointer constant that is the
        address of a function whose address the module never takes), or None."""
        active = [f.fn.name for f in self.frames] + [self.kernel.name]
        if fn.name in active:
            return f"recursive call of {fn.name} (not modelled)"
        if len(self.frames) >= MAX_DEPTH:
            return f"call of {fn.name} nested more than {MAX_DEPTH} deep (not modelled)"
        if self.ctx + ((id(ins), fn.name),) not in self.numbered:
            return f"call of {fn.name} outside the calls numbered in program order (not modelled)"
        return None

    def run_function(self, fn, ins: Instr, st: State) -> State:
        """Execute ``fn``'s body from ``st`` (its frame's registers); the state where it returns
        (every ``ret`` and the fall-through joined)."""
        key = ("func", fn.name)
        if key not in self.quiet:
            self._annotate(fn.body, key, False, {"<ret>": False})
        frame = Frame(fn, self.ctx + ((id(ins), fn.name),), ("ret", len(self.frames)))
        mark = len(self.pending.get(frame.key, []))
        saved = self.widths, self.ctx
        self.widths = {**self.widths, **self.widths_of(fn)}
        self.frames.append(frame)
        self.ctx = frame.ctx
        try:
            end = self.stmts(fn.body, st, key)
        finally:
            self.frames.pop()
            self.widths, self.ctx = saved
        lst = self.pending.get(frame.key, [])
        returns = lst[mark:]
        del lst[mark:]
        return self.merge([end] + returns)

    def ret(self, ins: Instr, st: State, guard) -> State:
        """``ret``: in a called function the thread returns to the caller (a pending state of
        the frame); in the kernel it exits."""
        if not self.frames:
            return self.exit(ins, st, guard)
        g = mk_and(st.pc, guard)
        self.pending.setdefault(self.frames[-1].key, []).append(State(g, dict(st.regs), st.epoch, st.exited))
        return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, st.exited)

    def carried_regs(self) -> tuple:
        """Extension point: pseudo-registers that are per thread, not per function (kept across
        calls); none by default."""
        return ()

    @staticmethod
    def widths_of(fn) -> dict:
        out = {}
        for d in fn.regs:
            w = d.type.bits if hasattr(d.type, "bits") else 32
            if d.count is None:
                out[d.name] = w
            else:
                for i in range(d.count):
                    out[f"{d.name}{i}"] = w
        return out

    # ------------------------------------------------------------------ .param variables
    def params_stored(self, lp) -> frozenset:
        """Names of the ``.param`` variables the statements of loop ``lp`` store into: ``st.param``
        to a named variable, and the result lists of its calls."""
        got = self._params_stored.get(id(lp))
        if got is None:
            names = set()
            for s, _ in walk(lp.body):
                if not isinstance(s, Instr):
                    continue
                if handler(s) == "call":
                    names.update(call_lists(s)[0])
                    continue
                d = deref(s)
                if d is not None and d[1] != "read" and space_of(s) in ("param", "param::func"):
                    a = s.operands[d[0]] if d[0] < len(s.operands) else None
                    if isinstance(a, Addr) and isinstance(a.base, Sym):
                        names.add(a.base.name)
            got = self._params_stored[id(lp)] = frozenset(names)
        return got

    @staticmethod
    def is_param_piece(reg: str, names) -> bool:
        """Whether pseudo-register ``reg`` is a piece of one of the ``.param`` variables ``names``."""
        return "+" in reg and reg.rsplit("+", 1)[0] in names

    @staticmethod
    def param_pieces(regs: dict, name: str, to: str) -> dict:
        """The pieces stored in ``.param`` variable ``name`` (pseudo-registers ``name+offset``),
        renamed to variable ``to``."""
        prefix = f"{name}+"
        return {f"{to}+{k[len(prefix):]}": v for k, v in regs.items() if k.startswith(prefix)}

    @staticmethod
    def forget_param(st: State, name: str):
        prefix = f"{name}+"
        for k in [k for k in st.regs if k.startswith(prefix)]:
            del st.regs[k]

    def store_param(self, st: State, ins: Instr, name: str, off: int, guard) -> bool:
        """``st.param [name+off], value`` (a call's argument, or a function's result): the
        stored pieces, as pseudo-registers. False when the value operand is not understood."""
        ops = ins.operands
        types = ins.types()
        ty = types[-1] if types else "b32"
        w = SCALAR_BITS.get(ty, 32)
        val = ops[1] if len(ops) > 1 else None
        elems = list(val.elems) if isinstance(val, VecOp) else [val]
        if val is None:
            return False
        prefix, step = f"{name}+", w // 8
        lo, hi = off, off + len(elems) * step
        for k in [k for k in st.regs if k.startswith(prefix)]:
            o = int(k[len(prefix):])
            t = st.regs[k][0]
            size = 1 if z3.is_bool(t) else t.size() // 8
            if not (o < hi and lo < o + size):
                continue
            same_slot = size == step and (o - lo) % step == 0
            if is_true(guard) or not same_slot:
                del st.regs[k]  # overwritten, or partly: its bytes are no longer one known piece
        for i, e in enumerate(elems):
            t, region = self.read(st, e, w)
            if t is None:
                self.forget_param(st, name)
                return False
            self.write(st, f"{name}+{off + i * (w // 8)}", (fit(t, w), region), guard)
        return True

    def load_param_piece(self, st: State, name: str, off: int, nbytes: int):
        """``(value, region)`` of ``nbytes`` of ``.param`` variable ``name`` at ``off``, from the
        pieces stored there (little-endian), or None when a byte was not stored."""
        prefix = f"{name}+"
        pieces = []
        for k, (t, region) in st.regs.items():
            if k.startswith(prefix):
                if z3.is_bool(t):
                    t = fit(t, 8)
                pieces.append((int(k[len(prefix):]), t, region))
        exact = next(((t, region) for o, t, region in pieces if o == off and t.size() == 8 * nbytes), None)
        if exact is not None:
            return exact
        parts, cur = [], off
        while cur < off + nbytes:
            hit = next(((o, t) for o, t, _ in pieces if o <= cur < o + t.size() // 8), None)
            if hit is None:
                return None
            o, t = hit
            take = min(o + t.size() // 8, off + nbytes) - cur
            lo = 8 * (cur - o)
            parts.append(z3.Extract(lo + 8 * take - 1, lo, t))
            cur += take
        whole = z3.Concat(*reversed(parts)) if len(parts) > 1 else parts[0]
        return z3.simplify(whole), None

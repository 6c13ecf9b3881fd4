"""The registers of an in-flight ``wgmma.mma_async``, statically: no instruction other than the
wgmma family reads or writes the accumulator registers (or the register A operand) of a wgmma
before a ``wgmma.wait_group`` retires the wgmma's group (PTX ISA §9.7.15.7: accessing them
earlier is undefined). The interpreter checks the same in a run (``race.async-pending``,
``_check_wgmma_regs``); the pipeline race argument (``pipeline.py``), whose pairs are about
shared memory, asks this before it proves "race-free: async".

Owns: a forward dataflow over the structured body of a kernel. The state is what may be in
flight: the committed groups, newest last (at most ``KEEP`` of them, older ones merged into the
oldest), and the wgmmas not yet committed. ``wgmma.commit_group`` closes the open group (an empty
one too: it counts for ``wait_group N``); ``wgmma.wait_group N`` keeps the ``N`` newest groups
(and the uncommitted wgmmas, which no wait covers); a guarded one may not run. Paths join by
union, groups aligned from the newest; loops run to a fixpoint. Every path counts, feasible or
not: a hazard found is a reason not to prove, never a violation by itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from kverify.semantics.ir.nodes import Block, Break, Continue, If, Imm, Instr, Loop, VecOp, operand_regs
from kverify.semantics.memory_model.protocols.async_groups import WGMMA_SYNC
from kverify.symbolic import row_of, sync_of

KEEP = 4  # committed groups told apart; older ones are merged (an over-approximation)


@dataclass(frozen=True)
class _State:
    groups: tuple = ()  # frozensets of (register name, wgmma instr id), oldest first
    open: frozenset = frozenset()

    def pending(self) -> frozenset:
        out = set(self.open)
        for g in self.groups:
            out |= g
        return frozenset(out)


def _join(a: _State | None, b: _State | None) -> _State | None:
    if a is None or b is None:
        return a if b is None else b
    n = max(len(a.groups), len(b.groups))
    ga = (frozenset(),) * (n - len(a.groups)) + a.groups
    gb = (frozenset(),) * (n - len(b.groups)) + b.groups
    return _trim(_State(tuple(x | y for x, y in zip(ga, gb)), a.open | b.open))


def _trim(s: _State) -> _State:
    if len(s.groups) <= KEEP:
        return s
    old = frozenset().union(*s.groups[:len(s.groups) - KEEP + 1])
    return _State((old,) + s.groups[len(s.groups) - KEEP + 1:], s.open)


def _wgmma_regs(ins: Instr) -> frozenset:
    """The registers an in-flight wgmma owns: its accumulators and a register A operand."""
    regs = {r.name for r in operand_regs(ins.operands[0])}
    if len(ins.operands) > 1 and isinstance(ins.operands[1], VecOp):
        regs |= {r.name for r in operand_regs(ins.operands[1])}
    return frozenset(regs)


@dataclass
class Hazard:
    wgmma: Instr  # the wgmma whose register is accessed
    access: Instr  # the instruction accessing it
    registers: tuple


class _Flow:
    def __init__(self):
        self.jumps: dict = {}  # label -> state arriving by Break / Continue
        self.hazards: dict = {}  # (id(access), id(wgmma)) -> Hazard
        self.wgmmas: dict = {}

    def stmts(self, body, s):
        for st in body:
            if s is None:
                return None
            s = self.stmt(st, s)
        return s

    def stmt(self, st, s):
        if isinstance(st, Instr):
            return self.instr(st, s)
        if isinstance(st, If):
            return _join(self.stmts(st.then, s), self.stmts(st.orelse, s))
        if isinstance(st, Block):
            out = self.stmts(st.body, s)
            return _join(out, self.jumps.pop(("break", st.label), None))
        if isinstance(st, Loop):
            head = s
            while True:
                self.jumps.pop(("continue", st.label), None)
                self.jumps.pop(("break", st.label), None)
                end = self.stmts(st.body, head)
                again = _join(end, self.jumps.get(("continue", st.label)))
                new = _join(head, again)
                if new == head:
                    break
                head = new
            # falling off the end leaves the loop (structuring: ``Continue`` starts the next one)
            return _join(end, self.jumps.pop(("break", st.label), None))
        if isinstance(st, Break):
            key = ("break", st.label)
            self.jumps[key] = _join(self.jumps.get(key), s)
            return None
        if isinstance(st, Continue):
            key = ("continue", st.label)
            self.jumps[key] = _join(self.jumps.get(key), s)
            return None
        return s

    def instr(self, ins: Instr, s: _State):
        sync = sync_of(ins)
        guarded = ins.guard is not None
        if sync == "wgmma.mma":
            self.wgmmas[id(ins)] = ins
            return _State(s.groups, s.open | {(r, id(ins)) for r in _wgmma_regs(ins)})
        if sync == "wgmma.commit":
            done = _trim(_State(s.groups + (s.open,), frozenset()))
            return _join(s, done) if guarded else done
        if sync == "wgmma.wait":
            n = next((o.value for o in ins.operands if isinstance(o, Imm)), None)
            if n is None:
                return s  # a wait for a count not known here retires nothing
            kept = _State(s.groups[max(0, len(s.groups) - n):] if n else (), s.open)  # n >= pending: none retired
            return _join(s, kept) if guarded else kept
        if sync in WGMMA_SYNC:
            return s
        names = {r.name for op in ins.operands for r in operand_regs(op)}
        for r, w in s.pending():
            if r in names:
                h = self.hazards.setdefault((id(ins), w), Hazard(self.wgmmas[w], ins, ()))
                if r not in h.registers:
                    h.registers = tuple(sorted(h.registers + (r,)))
        row = row_of(ins)
        if row is not None and row.flow in ("exit", "return") and not guarded:
            return None
        return s


def hazards(kernel) -> list | str:
    """Every (wgmma, access) pair where the access may touch a register of the wgmma while it is
    in flight, in program order of the accesses; or why the body cannot be followed (a branch
    the structuring left, a call)."""
    from kverify.semantics.ir.visit import instructions

    for ins in instructions(kernel.body):
        row = row_of(ins)
        if row is not None and row.flow in ("branch", "branch.indirect", "call"):
            return f"the wgmma registers are not followed through {ins.opcode} (line {ins.loc.line})"
    f = _Flow()
    f.stmts(kernel.body, _State())
    return sorted(f.hazards.values(), key=lambda h: (h.access.loc.ptx_line, h.wgmma.loc.ptx_line))

"""Which registers an instruction reads and writes, as the op table's operand slots say, and
what an undefined value does there (rule ``uninitialized.register``): flows into the results
(``value`` rows, warp collectives, the accumulator of ``wgmma``) or is a finding where it is used
(an address, a stored value, a membermask, an operand of a synchronization or asynchronous
operation, a guard). The interpreter's shadow (``semantics.interpreter.definedness``) follows
undefined lanes through a run with these sites; ``undefined_reads`` is the static side: the
registers a kernel may read on some path before any instruction wrote them.

PTX ISA (9.0): §5.1.1 register state space (the ISA gives a register no initial value).
"""
from __future__ import annotations

from .nodes import Addr, Block, Break, Continue, Imm, Instr, If, Loop, Neg, PairOp, Reg, VecOp
from .optable import space_of

_IGNORE = ("param", "param::func", "param::entry")


def _regs(op):
    """The (non-special) registers an operand reads: a register, the elements of a vector, a
    negated predicate, an address's base register and tensor coordinates."""
    if isinstance(op, Reg):
        return () if op.is_special else (op.name,)
    if isinstance(op, Neg):
        return _regs(op.reg)
    if isinstance(op, VecOp):
        return tuple(n for e in op.elems for n in _regs(e))
    if isinstance(op, Addr):
        base = _regs(op.base) if isinstance(op.base, Reg) else ()
        return base + tuple(n for c in op.coords for n in _regs(c))
    return ()


def _dests(op):
    if isinstance(op, Reg):
        return () if op.is_special else (op.name,)
    if isinstance(op, VecOp):
        return tuple(n for e in op.elems for n in _dests(e))
    if isinstance(op, PairOp):
        return _dests(op.first) + _dests(op.second)
    return ()


class Sites:
    """What one instruction reads and writes, by the op table's operand slots: ``flow``, the
    registers whose undefined lanes flow into the results; ``sink``, the registers that must be
    defined (``kind`` names the use); ``dests``, the registers it writes; ``names``, every
    register it reads; ``every``, the set of them and the destinations (the fast test)."""

    __slots__ = ("flow", "sink", "dests", "names", "how", "every")

    def __init__(self, ins):
        row = ins.row
        self.flow, self.sink, self.dests = [], [], []
        slots = row.operands if row is not None else ()
        collective = row.collective if row is not None else None
        value = row is not None and (row.effect == "value" or (row.effect != "memory" and collective in (
            "shuffle", "vote", "match", "reduce", "mma", "matrix")))  # not ldmatrix / stmatrix: accesses
        space = space_of(ins) if row is not None and row.effect == "memory" else None
        self.how = (row.semantics if row is not None and row.semantics in ("selp", "slct") else
                    "wgmma" if row is not None and row.sync == "wgmma.mma" else
                    "shfl" if collective == "shuffle" else
                    "lanes" if collective in ("vote", "match", "reduce", "mma", "matrix") else "")
        for i, op in enumerate(ins.operands):
            sl = slots[min(i, len(slots) - 1)] if slots else None
            acc, name = (sl.access, sl.name) if sl is not None else ("use", "")
            if acc == "def":
                self.dests.extend(_dests(op))
                continue
            if acc == "target" or (row is not None and row.flow == "call"):
                continue  # the callee reads its parameters as defined
            if isinstance(op, Addr) or acc in ("load", "store", "update", "addr"):
                if acc == "update" and self.how == "wgmma":  # the accumulator: read and written
                    self.dests.extend(_dests(op))
                    self.flow.extend(("d", n) for n in _regs(op))
                    continue
                if acc == "load" and self.how == "wgmma" and isinstance(op, VecOp):  # A from registers
                    self.flow.extend(("a", n) for n in _regs(op))
                    continue
                self.sink.extend(("address", n) for n in _regs(op))
                continue
            if name == "membermask":
                self.sink.extend(("membermask", n) for n in _regs(op))
            elif value:
                self.flow.extend((name, n) for n in _regs(op))
            elif row is not None and row.effect == "memory" and space in _IGNORE:
                continue  # a call's arguments and results: the callee reads its parameters as defined
            elif row is not None and row.effect == "memory":
                self.sink.extend(("stored value" if name in ("b", "c") else "operand", n) for n in _regs(op))
            else:
                self.sink.extend(("operand", n) for n in _regs(op))
        self.names = tuple({n for _, n in self.flow + self.sink})
        self.every = frozenset(self.names) | frozenset(self.dests)


def _reads(ins, s):
    """The registers ``ins`` (its ``Sites`` ``s``) reads, its guard's included: the accumulator of a
    ``wgmma`` whose scale-d is the immediate 0 is not read."""
    names = [n for k, n in s.flow if not (k == "d" and _scale_d_off(ins))] + [n for _, n in s.sink]
    if ins.guard is not None and not ins.guard.reg.is_special:
        names.append(ins.guard.reg.name)
    return names


def _scale_d_off(ins):
    rest = ins.operands[3:]
    return bool(rest) and isinstance(rest[0], Imm) and rest[0].value == 0


def undefined_reads(body) -> list:
    """``[(register, instruction or branch)]``: where a register may be read before any
    instruction wrote it, on some path through ``body`` (structured statements; a called
    function's body is its own: its parameters arrive as ``.param`` variables). A guarded write
    defines nothing for the paths where its guard is false; a loop is iterated to its fixpoint."""
    found: dict = {}

    def meet(a, b):
        return b if a is None else a if b is None else a & b

    def walk(stmts, d, brk, cont, record):
        for s in stmts:
            if d is None:
                return None
            t = type(s)
            if t is Instr:
                sites = Sites(s)
                if record:
                    for n in _reads(s, sites):
                        if n not in d:
                            found.setdefault((n, id(s)), (n, s))
                if s.guard is None:
                    d = d | set(sites.dests)
            elif t is If:
                if record and not s.cond.is_special and s.cond.name not in d:
                    found.setdefault((s.cond.name, id(s)), (s.cond.name, s))
                d = meet(walk(s.then, d, brk, cont, record), walk(s.orelse, d, brk, cont, record) if s.orelse else d)
            elif t is Block:
                brk[s.label] = None
                fall = walk(s.body, d, brk, cont, record)
                d = meet(fall, brk.pop(s.label))
            elif t is Loop:
                head = d
                while True:
                    brk[s.label], cont[s.label] = None, None
                    fall = walk(s.body, head, brk, cont, False)
                    nxt = meet(d, cont[s.label])
                    if nxt == head:
                        break
                    head = nxt
                brk[s.label], cont[s.label] = None, None
                fall = walk(s.body, head, brk, cont, record)
                cont.pop(s.label)
                d = meet(fall, brk.pop(s.label))
            elif t is Break:
                brk[s.label] = meet(brk.get(s.label), d)
                return None
            elif t is Continue:
                cont[s.label] = meet(cont.get(s.label), d)
                return None
        return d

    walk(body, frozenset(), {}, {}, True)
    return list(found.values())

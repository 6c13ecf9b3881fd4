"""Cooperative groups' grid-barrier wait as one blocking atomic.

``grid.sync()`` (CUDA's ``cooperative_groups/details/sync.h``, ``sync_grids``) has one thread per
CTA add to a counter in the grid workspace and spin until the counter's top bit flips::

    atom.add.release.gpu.u32 old, [A], inc;       // inc: 1, or 0x80000001 - nCTAs for CTA 0
    L: ld.acquire.gpu.u32 cur, [A];
       xor.b32 t, cur, old;
       setp.gt.s32 p, t, -1;                       // the top bits of cur and old agree
       @p bra L;

The increments of all CTAs sum to 0x80000000, so the top bit flips exactly when the last CTA
has arrived, whatever the order of the arrivals; the order changes ``old`` but not its top bit
relative to the final value. The pair becomes the atomic with ``Instr.blocking`` set: "add, then
wait until the top bit of ``[A]`` differs from the top bit of the value returned, then read
``[A]`` with the load's acquire" -- the loop's exact meaning (the interpreter's ``atom`` handler
implements it), without a returned value the schedule decides (PTX ISA §9.7.13.5 atom,
§9.7.9.8 ld, §8.9 release sequences: the acquire read of the final value synchronizes with every
arrival's release). Recognized when the loop body is exactly that load of the same address with
an acquiring memory order, the xor of the loaded and the returned values, a signed comparison
that continues exactly while the xor is non-negative, and the continue; and when none of the
registers the loop or the atomic defines is read by the statements after it.
"""
from __future__ import annotations

from dataclasses import replace

from .blocking_wait import _defined, _reads
from .nodes import Continue, If, Imm, Instr, Loop, Reg
from .optable import memory_access, semantics_of

#: (comparison, immediate, negated continue) of ``setp.<cmp>.s32 p, t, imm`` with which
#: ``if p continue`` (``negated`` False) or ``if !p continue`` keeps spinning exactly while t >= 0
_WHILE_NONNEGATIVE = {("gt", -1, False), ("ge", 0, False), ("lt", 0, True), ("le", -1, True)}
_ACQUIRING = ("acquire", "acq_rel")
_RELEASING = ("release", "acq_rel")
_SCOPES = ("gpu", "sys")


def _imm(o) -> int | None:
    if not isinstance(o, Imm):
        return None
    v = o.value
    return v - (1 << 32) if v >= 1 << 31 else v


def _spin_of(atom: Instr, loop) -> bool:
    """Whether ``loop`` is the wait for the top bit of ``atom``'s location to flip."""
    if not isinstance(loop, Loop) or len(loop.body) != 4:
        return False
    ld, x, sp, cont = loop.body
    old = atom.operands[0].name
    if not (isinstance(ld, Instr) and ld.guard is None and ld.supported and memory_access(ld) == "load"
            and any(m in ld.mods for m in _ACQUIRING) and any(m in ld.mods for m in _SCOPES)
            and set(ld.mods) & {"u32", "b32", "s32"} and len(ld.operands) == 2
            and isinstance(ld.operands[0], Reg) and ld.operands[1] == atom.operands[1]):
        return False
    cur = ld.operands[0].name
    if not (isinstance(x, Instr) and x.guard is None and semantics_of(x) == "xor" and "b32" in x.mods
            and isinstance(x.operands[0], Reg)
            and {getattr(o, "name", None) for o in x.operands[1:]} == {cur, old}):
        return False
    t = x.operands[0].name
    if not (isinstance(sp, Instr) and sp.guard is None and semantics_of(sp) == "setp" and "s32" in sp.mods
            and len(sp.operands) == 3 and isinstance(sp.operands[0], Reg)
            and getattr(sp.operands[1], "name", None) == t):
        return False
    cmp = next((m for m in sp.mods if m in ("gt", "ge", "lt", "le")), None)
    if not (isinstance(cont, If) and not cont.orelse and len(cont.then) == 1
            and isinstance(cont.then[0], Continue) and cont.then[0].label == loop.label
            and cont.cond.name == sp.operands[0].name):
        return False
    return (cmp, _imm(sp.operands[2]), cont.negated) in _WHILE_NONNEGATIVE


def _grid_barrier(stmts: list) -> list:
    """``atom.add.release old, [A], inc`` followed by the spin on the top bit of ``[A]`` -> the
    atomic with ``blocking`` set (see the module docstring)."""
    out = list(stmts)
    i = 0
    while i + 1 < len(out):
        a = out[i]
        if (isinstance(a, Instr) and not a.blocking and a.guard is None and a.supported
                and semantics_of(a) == "atom" and memory_access(a) == "update" and "add" in a.mods
                and set(a.mods) & {"u32", "b32", "s32"} and any(m in a.mods for m in _RELEASING)
                and any(m in a.mods for m in _SCOPES) and len(a.operands) == 3
                and isinstance(a.operands[0], Reg) and _spin_of(a, out[i + 1])):
            loop = out[i + 1]
            defined = {a.operands[0].name} | {_defined(x) for x in loop.body if isinstance(x, Instr)}
            if not any(_reads(out[i + 2:], r) for r in defined if r):
                out[i:i + 2] = [replace(a, blocking=True)]
        i += 1
    return out

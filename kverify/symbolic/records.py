"""What one symbolic thread leaves behind: its memory accesses (``Access``), its barrier
instances and the loop decisions around them (``SyncSite``), and the executor's state
between statements (``State``: path condition, registers, barrier epoch, exited).

PTX ISA (9.0): ld, st (§9.7.9), atom, red (§9.7.13); §9.7.13.1 bar/barrier.
"""
from __future__ import annotations

from dataclasses import dataclass

from kverify.semantics.ir.nodes import Instr

from .terms import FALSE


#: The epoch packs two counts: CTA barriers (``bar.sync 0``) in its low 32 bits and warp
#: barriers (``bar.warp.sync`` with every lane in the mask) in its high 32 bits. Two threads
#: of one warp are in one interval when the whole epoch is equal; two threads of different
#: warps of one CTA when the low half is. A kernel without warp barriers has the plain count
#: of CTA barriers; with them, counts are exact below 2^32 barriers of each kind.
CTA_BARRIER_STEP = 1
WARP_BARRIER_STEP = 1 << 32


@dataclass
class Access:
    """One memory access of thread A: its terms are rewritten in place once the executor
    knows more (loads resolved, loop epochs substituted), hence not frozen."""

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
    value: object = None  # a plain scalar store's value (thread A's term), for same-value races
    #: a row of a warp-collective matrix access (ldmatrix/stmatrix): the row the thread's address
    #: names, whose bytes the warp moves to or from other lanes' registers
    collective: bool = False

    @property
    def writes(self) -> bool:
        return self.mode != "read"


@dataclass
class SyncSite:
    """A barrier instance, or a decision (continue / leave) of a loop that contains one;
    their conditions must be uniform across the CTA (across the warp, for warp barriers
    only) for barrier intervals to mean anything."""

    kind: str  # barrier | loop-continue | loop-exit | collective (a warp collective: ``Executor.masks``)
    instr: Instr | None
    loc: object
    pc: object
    exited: object
    head_pc: object  # barrier, collective: TRUE; loop decisions: pc of the loop head of that iteration
    loops: tuple
    scope: str = "cta"  # whose threads must agree on it: "cta" (bar.sync) or "warp" (bar.warp.sync)
    seq: int = -1  # a barrier's position in program order (``Executor.seq_of``)
    masks: tuple = ()  # collective: its membermask terms (None where not followed)


@dataclass
class AssertionSite:
    """An assertion thread A reaches: ``fails`` is the condition (path condition included) under
    which it is false; ``what`` names it (``__assert``, ``CUDA assert()``)."""

    instr: object
    fails: object
    what: str


@dataclass
class AtomicResult:
    """The value an atomic read-modify-write (``atom``) returns to thread A: ``result`` is the
    fresh approximate symbol the destination register received (thread B's is its renaming),
    ``access`` the atomic's ``Access`` (address, path condition, epoch, loops), ``op`` its
    operation modifier (``add``, ``exch``, ``cas``, ...) and ``operand`` thread A's term of its
    ``b`` operand (the increment of an ``add``), or None."""

    access: Access
    result: object
    op: str | None
    operand: object


@dataclass
class CallSite:
    """An indirect call thread A reaches whose pointer may hold no function's address
    (``Calls.indirect``): ``bad`` is the condition (path condition included) under which the
    pointer ``target`` (a BV64 term) is none of the module's function addresses; ``why`` is the
    reason the executor gave the race obligations."""

    instr: object
    bad: object
    target: object
    why: str


@dataclass
class PreconditionSite:
    """A precondition thread A reaches: under ``pc`` it requires ``holds``; ``what`` names it
    (``__requires``, ``__assume``)."""

    instr: object
    pc: object
    holds: object
    what: str


@dataclass
class State:
    """Thread A between statements: path condition, registers (name -> (term, region)),
    barrier epoch, and the condition that it has exited."""

    pc: object
    regs: dict
    epoch: object
    exited: object

    def dead(self) -> "State":
        return State(FALSE, self.regs, self.epoch, self.exited)

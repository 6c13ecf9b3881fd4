"""Per-thread (per-warpgroup for wgmma) queues of asynchronous operations and their groups.

Three protocols share one queue shape:

* Ampere ``cp.async`` groups — ``cp.async`` / ``cp.async.commit_group`` /
  ``cp.async.wait_group N`` / ``cp.async.wait_all`` (PTX ISA §9.7.9.25.3,
  ``data-movement-and-conversion-instructions-cp-async``, ``-cp-async-commit-group``,
  ``-cp-async-wait-group``);
* bulk async groups — ``cp.async.bulk ... .bulk_group`` / ``cp.async.bulk.commit_group`` /
  ``cp.async.bulk.wait_group{.read} N`` (§9.7.9.25.4, ``-cp-async-bulk-commit-group``,
  ``-cp-async-bulk-wait-group``), where source-read completion and full completion are
  tracked separately;
* wgmma groups — ``wgmma.fence`` / ``wgmma.mma_async`` / ``wgmma.commit_group`` /
  ``wgmma.wait_group N`` (§9.7.15.7, ``asynchronous-warpgroup-level-matrix-instructions-
  wgmma-fence``, ``-wgmma-commit-group``, ``-wgmma-wait-group``), with the fence
  obligation and the rule that accumulator/A-fragment registers of an in-flight
  ``mma_async`` are not touched before a covering wait.

Operations are issued with a caller-chosen hashable id and start *uncommitted*;
``CommitGroup`` closes the uncommitted ones into a group (possibly empty, as in PTX).
``Complete(op_id)`` (and ``CompleteRead(op_id)`` for bulk copies) is the asynchronous unit
finishing an operation; it may happen in any order, even before the commit: the ISA only
promises what ``wait_group`` observes, and a wait is satisfied when every operation of every
group except the ``n`` most recent ones has completed (so groups are *observed* complete
in commit order).  A satisfied wait retires the covered groups and reports
``("wait-satisfied", ops)``: those operations are guaranteed complete from then on.  A wait
whose condition does not hold yet reports ``("blocked", missing_ops)`` and changes nothing:
waiting is not a violation.

Completing an operation that is not in flight, or issuing an id that is already in flight,
is a scheduler error: ``("not-enabled", reason)``, state unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Hashable, Union

from .common import Outcome, Protocol, Rule, Violation, check_int, not_enabled, reject

_DM = "data-movement-and-conversion-instructions-"
_WG = "asynchronous-warpgroup-level-matrix-instructions-"

WAIT_RANGE = Rule(
    "async-group.wait-range",
    "§9.7.9.25.3 cp.async.wait_group; §9.7.9.25.4 cp.async.bulk.wait_group; "
    "§9.7.15.7 wgmma.wait_group",
    _DM + "cp-async-wait-group",
    "wait_group operand N is negative",
)
OVERLAP = Rule(
    "async-group.overlap",
    "§9.7.9.25.3 cp.async",
    _DM + "cp-async",
    "two cp.async of one cp.async-group write overlapping destination bytes",
)
MISSING_FENCE = Rule(
    "wgmma.missing-fence",
    "§9.7.15.7 wgmma.fence",
    _WG + "wgmma-fence",
    "wgmma.mma_async without a wgmma.fence before the first mma_async, or after a register "
    "access to its accumulator/A-fragment registers",
)
WAIT_REQUIRED = Rule(
    "wgmma.wait-required",
    "§9.7.15.7 wgmma.wait_group",
    _WG + "wgmma-wait-group",
    "accumulator/A-fragment registers of an in-flight wgmma.mma_async accessed before a "
    "wgmma.wait_group that covers it",
)
STORE_REPLICATED = Rule(
    "async-group.store-replicated",
    "§9.7.9.25.4.2 cp.async.bulk, §9.7.9.25.5.2 cp.async.bulk.tensor (each executing thread issues "
    "one copy)",
    _DM + "cp-async-bulk-tensor",
    "lanes of one warp execute the same bulk copy to global memory (bulk_group completion) with "
    "identical operands in one instruction: each lane issues a copy of the same bytes to the same "
    "place, writes no order can tell apart (CUTLASS's and quack's warp-wide TMA store); issue it "
    "from one lane (elect.sync); the interpreter performs it once",
    severity="warning",
)

RULES: tuple[Rule, ...] = (WAIT_RANGE, OVERLAP, MISSING_FENCE, WAIT_REQUIRED, STORE_REPLICATED)

#: the op table's ``sync`` effects of the wgmma-group instructions (what this protocol consumes)
WGMMA_SYNC = frozenset({"wgmma.fence", "wgmma.commit", "wgmma.wait", "wgmma.mma"})

# --------------------------------------------------------------------------- queue


@dataclass(frozen=True)
class GroupQueue:
    uncommitted: tuple = ()  # op ids, issue order
    groups: tuple = ()  # committed groups, oldest first; each a tuple of op ids
    done: frozenset = frozenset()  # in-flight ops whose async work has finished
    read_done: frozenset = frozenset()  # bulk: in-flight ops whose source reads finished
    read_guaranteed: frozenset = frozenset()  # bulk: ops covered by a satisfied .read wait

    def in_flight(self) -> tuple:
        out = tuple(op for g in self.groups for op in g)
        return out + self.uncommitted

    def __contains__(self, op: Hashable) -> bool:
        return op in self.uncommitted or any(op in g for g in self.groups)


def _issue(q: GroupQueue, op: Hashable) -> GroupQueue:
    return replace(q, uncommitted=q.uncommitted + (op,))


def _commit(q: GroupQueue) -> GroupQueue:
    return replace(q, uncommitted=(), groups=q.groups + (q.uncommitted,))


def _covered(q: GroupQueue, n: int) -> tuple[tuple, tuple]:
    """(covered groups, remaining groups) for ``wait_group n``."""
    keep = min(n, len(q.groups))
    cut = len(q.groups) - keep
    return q.groups[:cut], q.groups[cut:]


def _wait(q: GroupQueue, n: int, read: bool = False) -> tuple[GroupQueue, tuple]:
    covered, remaining = _covered(q, n)
    ops = tuple(op for g in covered for op in g)
    finished = q.read_done | q.done if read else q.done
    missing = tuple(op for op in ops if op not in finished)
    if missing:
        return q, ("blocked", missing)
    if read:
        return replace(q, read_guaranteed=q.read_guaranteed | frozenset(ops)), (
            "read-wait-satisfied", ops)
    gone = frozenset(ops)
    return (
        replace(q, groups=remaining, done=q.done - gone, read_done=q.read_done - gone,
                read_guaranteed=q.read_guaranteed - gone),
        ("wait-satisfied", ops),
    )


def _complete(q: GroupQueue, op: Hashable, read_only: bool) -> GroupQueue | None:
    if op not in q:
        return None
    if read_only:
        if op in q.read_done or op in q.done:
            return None
        return replace(q, read_done=q.read_done | {op})
    if op in q.done:
        return None
    return replace(q, done=q.done | {op}, read_done=q.read_done | {op})


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class CommitGroup:
    """``cp.async.commit_group`` / ``cp.async.bulk.commit_group`` / ``wgmma.commit_group``."""


@dataclass(frozen=True)
class WaitGroup:
    """``*.wait_group N``; ``read=True`` is ``cp.async.bulk.wait_group.read N``."""

    n: int
    read: bool = False

    def __post_init__(self) -> None:
        check_int("n", self.n)


@dataclass(frozen=True)
class WaitAll:
    """``cp.async.wait_all`` = ``cp.async.commit_group; cp.async.wait_group 0``."""


@dataclass(frozen=True)
class Complete:
    """The asynchronous unit finishes operation ``op_id`` (for a bulk copy: reads and
    writes both done)."""

    op_id: Hashable


@dataclass(frozen=True)
class CompleteRead:
    """A bulk copy finished reading its source (its writes may still be in flight)."""

    op_id: Hashable


@dataclass(frozen=True)
class CpAsync:
    """``cp.async`` issue; ``dst`` = (start byte, size in bytes) in shared memory, if known."""

    op_id: Hashable
    dst: tuple[int, int] | None = None


@dataclass(frozen=True)
class BulkCopy:
    """Issue of a ``cp.async.bulk... .bulk_group`` operation (e.g. a TMA store)."""

    op_id: Hashable


@dataclass(frozen=True)
class WgmmaFence:
    """``wgmma.fence.sync.aligned``."""


@dataclass(frozen=True)
class MmaAsync:
    """``wgmma.mma_async``; ``regs`` names the register sets it reads/writes (accumulator,
    and A fragment when A comes from registers)."""

    op_id: Hashable
    regs: frozenset = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "regs", frozenset(self.regs))


@dataclass(frozen=True)
class RegisterAccess:
    """A generic instruction reading or writing the named register sets."""

    regs: frozenset = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "regs", frozenset(self.regs))


# --------------------------------------------------------------------------- cp.async


@dataclass(frozen=True)
class CpAsyncState:
    queue: GroupQueue = GroupQueue()
    dst: tuple = ()  # sorted (op_id repr, op_id, start, size) of in-flight ops with a dst


def _drop_dst(dst: tuple, q: GroupQueue) -> tuple:
    return tuple(d for d in dst if d[1] in q)


CpAsyncCommand = Union[CpAsync, CommitGroup, WaitGroup, WaitAll, Complete]


def cp_async_step(state: CpAsyncState, cmd: CpAsyncCommand) -> Outcome:
    q = state.queue
    if isinstance(cmd, CpAsync):
        if cmd.op_id in q:
            return not_enabled(state, f"op {cmd.op_id!r} already in flight")
        entry: tuple = ()
        if cmd.dst is not None:
            start, size = cmd.dst
            for _, other, ostart, osize in state.dst:
                if other in q.uncommitted and start < ostart + osize and ostart < start + size:
                    return reject(state, OVERLAP,
                                  f"cp.async {cmd.op_id!r} and {other!r} in one group both write "
                                  f"bytes [{max(start, ostart)}, {min(start + size, ostart + osize)})",
                                  op=cmd.op_id, other=other)
            entry = ((repr(cmd.op_id), cmd.op_id, start, size),)
        return Outcome(
            CpAsyncState(_issue(q, cmd.op_id), tuple(sorted(state.dst + entry, key=lambda d: d[0]))),
            (("issued", cmd.op_id),),
        )
    if isinstance(cmd, CommitGroup):
        return Outcome(replace(state, queue=_commit(q)), (("committed", q.uncommitted),))
    if isinstance(cmd, (WaitGroup, WaitAll)):
        if isinstance(cmd, WaitGroup) and cmd.read:
            raise ValueError("cp.async.wait_group has no .read form")
        n = 0 if isinstance(cmd, WaitAll) else cmd.n
        if n < 0:
            return reject(state, WAIT_RANGE, f"cp.async.wait_group {n}", n=n)
        if isinstance(cmd, WaitAll):
            q = _commit(q)
        q2, eff = _wait(q, n)
        if eff[0] == "blocked":
            return Outcome(state, (eff,))
        return Outcome(CpAsyncState(q2, _drop_dst(state.dst, q2)), (eff,))
    if isinstance(cmd, Complete):
        q2 = _complete(q, cmd.op_id, read_only=False)
        if q2 is None:
            return not_enabled(state, f"op {cmd.op_id!r} is not in flight or already complete")
        return Outcome(replace(state, queue=q2), (("completed", cmd.op_id),))
    raise TypeError(f"not a cp.async command: {cmd!r}")


# --------------------------------------------------------------------------- bulk groups


@dataclass(frozen=True)
class BulkGroupState:
    queue: GroupQueue = GroupQueue()


BulkCommand = Union[BulkCopy, CommitGroup, WaitGroup, Complete, CompleteRead]


def bulk_group_step(state: BulkGroupState, cmd: BulkCommand) -> Outcome:
    q = state.queue
    if isinstance(cmd, BulkCopy):
        if cmd.op_id in q:
            return not_enabled(state, f"op {cmd.op_id!r} already in flight")
        return Outcome(BulkGroupState(_issue(q, cmd.op_id)), (("issued", cmd.op_id),))
    if isinstance(cmd, CommitGroup):
        return Outcome(BulkGroupState(_commit(q)), (("committed", q.uncommitted),))
    if isinstance(cmd, WaitGroup):
        if cmd.n < 0:
            return reject(state, WAIT_RANGE, f"cp.async.bulk.wait_group {cmd.n}", n=cmd.n)
        q2, eff = _wait(q, cmd.n, read=cmd.read)
        return Outcome(BulkGroupState(q2), (eff,))
    if isinstance(cmd, (Complete, CompleteRead)):
        q2 = _complete(q, cmd.op_id, read_only=isinstance(cmd, CompleteRead))
        if q2 is None:
            return not_enabled(state, f"op {cmd.op_id!r} is not in flight at that stage")
        kind = "read-completed" if isinstance(cmd, CompleteRead) else "completed"
        return Outcome(BulkGroupState(q2), ((kind, cmd.op_id),))
    raise TypeError(f"not a bulk-group command: {cmd!r}")


def reads_guaranteed(state: BulkGroupState) -> frozenset:
    """In-flight bulk ops whose source reads a satisfied ``wait_group.read`` guaranteed."""
    return state.queue.read_guaranteed


# --------------------------------------------------------------------------- wgmma


@dataclass(frozen=True)
class WgmmaState:
    queue: GroupQueue = GroupQueue()
    fenced: bool = False  # a wgmma.fence has executed (before the first mma_async)
    touched: frozenset = frozenset()  # register sets accessed since the last fence
    op_regs: tuple = ()  # (repr, op_id, regs) of in-flight mma_async, sorted


WgmmaCommand = Union[WgmmaFence, MmaAsync, RegisterAccess, CommitGroup, WaitGroup, Complete]


def wgmma_step(state: WgmmaState, cmd: WgmmaCommand) -> Outcome:
    q = state.queue
    if isinstance(cmd, WgmmaFence):
        return Outcome(replace(state, fenced=True, touched=frozenset()), (("fenced",),))
    if isinstance(cmd, MmaAsync):
        if cmd.op_id in q:
            return not_enabled(state, f"op {cmd.op_id!r} already in flight")
        if not state.fenced:
            return reject(state, MISSING_FENCE, "wgmma.mma_async before any wgmma.fence",
                          op=cmd.op_id)
        stale = cmd.regs & state.touched
        if stale:
            return reject(state, MISSING_FENCE,
                          f"wgmma.mma_async uses registers {sorted(stale)} accessed since the "
                          f"last wgmma.fence", op=cmd.op_id, regs=tuple(sorted(stale)))
        op_regs = tuple(sorted(state.op_regs + ((repr(cmd.op_id), cmd.op_id, cmd.regs),),
                               key=lambda e: e[0]))
        return Outcome(replace(state, queue=_issue(q, cmd.op_id), op_regs=op_regs),
                       (("issued", cmd.op_id),))
    if isinstance(cmd, RegisterAccess):
        for _, op, regs in state.op_regs:
            clash = regs & cmd.regs
            if clash:
                return reject(state, WAIT_REQUIRED,
                              f"registers {sorted(clash)} of in-flight wgmma {op!r} accessed "
                              f"before a covering wgmma.wait_group", op=op,
                              regs=tuple(sorted(clash)))
        return Outcome(replace(state, touched=state.touched | cmd.regs),
                       (("registers-accessed", tuple(sorted(cmd.regs))),))
    if isinstance(cmd, CommitGroup):
        return Outcome(replace(state, queue=_commit(q)), (("committed", q.uncommitted),))
    if isinstance(cmd, WaitGroup):
        if cmd.read:
            raise ValueError("wgmma.wait_group has no .read form")
        if cmd.n < 0:
            return reject(state, WAIT_RANGE, f"wgmma.wait_group {cmd.n}", n=cmd.n)
        q2, eff = _wait(q, cmd.n)
        if eff[0] == "blocked":
            return Outcome(state, (eff,))
        op_regs = tuple(e for e in state.op_regs if e[1] in q2)
        return Outcome(replace(state, queue=q2, op_regs=op_regs), (eff,))
    if isinstance(cmd, Complete):
        q2 = _complete(q, cmd.op_id, read_only=False)
        if q2 is None:
            return not_enabled(state, f"op {cmd.op_id!r} is not in flight or already complete")
        return Outcome(replace(state, queue=q2), (("completed", cmd.op_id),))
    raise TypeError(f"not a wgmma command: {cmd!r}")


def wgmma_run_on(state: WgmmaState, cmd: WgmmaCommand, violation: Violation) -> tuple[Violation, Outcome | None]:
    """A run goes on past a wgmma.mma_async without a covering wgmma.fence as if the
    warpgroup had fenced."""
    if not isinstance(cmd, MmaAsync) or violation.rule != MISSING_FENCE.id:
        return violation, None
    out = wgmma_step(replace(state, fenced=True, touched=frozenset()), cmd)
    return violation, (out if out.violation is None else None)


CP_ASYNC = Protocol("cp.async groups", cp_async_step)
BULK_GROUP = Protocol("bulk async groups", bulk_group_step)
WGMMA = Protocol("wgmma groups", wgmma_step, wgmma_run_on)


def waiting_for(outcome: Outcome) -> tuple:
    """The operations a wait still waits for: the outcome of stepping the wait command."""
    eff = outcome.effect("blocked")
    return tuple(eff[1]) if eff else ()


__all__ = [
    "CP_ASYNC", "BULK_GROUP", "WGMMA", "WGMMA_SYNC", "wgmma_run_on", "waiting_for", "GroupQueue", "CommitGroup", "WaitGroup", "WaitAll", "Complete", "CompleteRead", "CpAsync",
    "BulkCopy", "WgmmaFence", "MmaAsync", "RegisterAccess", "CpAsyncState", "BulkGroupState",
    "WgmmaState", "cp_async_step", "bulk_group_step", "wgmma_step", "reads_guaranteed", "RULES",
]

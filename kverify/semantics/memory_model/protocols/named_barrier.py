"""CTA named barriers 0..15: ``bar{.cta}.sync|arrive|red`` / ``barrier{.cta}...``.

Owns the per-CTA state of the sixteen named barriers and the rules of PTX ISA §9.7.13.1
(``parallel-synchronization-and-communication-instructions-bar-barrier``): ids 0..15, thread
counts that are multiples of the warp size, arrival counted per *warp* (a warp's arrival
counts all of its threads: 32, or ``warp_threads`` for a CTA's last partial warp; exited
threads count as arrived), completion when the arrived threads reach the count, no second
arrival of a warp before the barrier resets, no mixing of ``.red`` with ``.sync``/``.arrive``
on an active barrier, and one count per active barrier.

``Sync`` and ``Red`` block the issuing warp until the barrier completes; ``Arrive`` does not.
A warp that is blocked cannot execute: a command from it is ``("not-enabled", ...)``.

Check order: (warp blocked -> not-enabled), named-id, named-count (operand), named-reuse
(warp already arrived), named-reuse (.red mixed with sync/arrive, or a different .red op),
named-count (count differs from the active barrier's count).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Union

from .common import Outcome, Protocol, Rule, Violation, check_int, not_enabled, reject

NUM_NAMED_BARRIERS = 16
WARP_SIZE = 32
RED_OPS = ("popc", "and", "or")

_BAR = "parallel-synchronization-and-communication-instructions-bar-barrier"

NAMED_ID = Rule(
    "barrier.named-id", "§9.7.13.1 bar, barrier", _BAR,
    "named barrier id outside 0..15",
)
NAMED_COUNT = Rule(
    "barrier.named-count", "§9.7.13.1 bar, barrier", _BAR,
    "thread count not a positive multiple of the warp size, larger than the CTA, or "
    "different from the count of the active barrier instance",
)
NAMED_REUSE = Rule(
    "barrier.named-reuse", "§9.7.13.1 bar, barrier", _BAR,
    "a warp arrives again on a barrier id before that barrier completed (reset), or .red is "
    "mixed with .sync/.arrive (or another .red op) on the same active barrier",
)

RULES: tuple[Rule, ...] = (NAMED_ID, NAMED_COUNT, NAMED_REUSE)


@dataclass(frozen=True)
class BarrierSlot:
    """One named barrier.  Idle when ``count is None``."""

    count: int | None = None
    mode: str | None = None  # "sync" (bar.sync / bar.arrive) or "red.<op>"
    arrived: frozenset = frozenset()  # warps arrived in this instance
    blocked: frozenset = frozenset()  # of those, warps waiting (sync/red)
    arrived_threads: int = 0
    red_values: tuple = ()  # sorted (warp, value) pairs for .red

    @property
    def idle(self) -> bool:
        return self.count is None


_IDLE_SLOTS = tuple(BarrierSlot() for _ in range(NUM_NAMED_BARRIERS))


@dataclass(frozen=True)
class NamedBarrierState:
    cta_threads: int
    slots: tuple = _IDLE_SLOTS

    def __post_init__(self) -> None:
        check_int("cta_threads", self.cta_threads)
        if self.cta_threads < 1:
            raise ValueError("cta_threads must be positive")
        if len(self.slots) != NUM_NAMED_BARRIERS:
            raise ValueError("need exactly 16 barrier slots")

    @property
    def max_count(self) -> int:
        """Largest legal count: the CTA size rounded up to whole warps."""
        return -(-self.cta_threads // WARP_SIZE) * WARP_SIZE

    def blocked_warps(self) -> frozenset:
        out: frozenset = frozenset()
        for slot in self.slots:
            out |= slot.blocked
        return out

    def blocked_on(self, warp: int) -> int | None:
        for i, slot in enumerate(self.slots):
            if warp in slot.blocked:
                return i
        return None


def _check_common(warp: int, bar_id: int, warp_threads: int) -> None:
    check_int("warp", warp)
    check_int("bar_id", bar_id)
    check_int("warp_threads", warp_threads)
    if warp < 0:
        raise ValueError("warp id must be non-negative")
    if not 1 <= warp_threads <= WARP_SIZE:
        raise ValueError("warp_threads must be in 1..32")


@dataclass(frozen=True)
class Sync:
    """``bar.sync a{, b}`` / ``barrier.sync``: arrive and wait.  ``count=None``: all
    threads of the CTA."""

    warp: int
    bar_id: int = 0
    count: int | None = None
    warp_threads: int = WARP_SIZE

    def __post_init__(self) -> None:
        _check_common(self.warp, self.bar_id, self.warp_threads)
        check_int("count", self.count, allow_none=True)

    @property
    def commutes(self) -> bool:
        """Arrivals of every thread of the CTA commute with one another and with exits: no warp
        arrives twice at one instance (it waits), so the order does not change which instance an
        arrival joins (interpreter.dpor)."""
        return self.count is None


@dataclass(frozen=True)
class Arrive:
    """``bar.arrive a, b``: arrive without waiting (the count is mandatory)."""

    warp: int
    bar_id: int
    count: int
    warp_threads: int = WARP_SIZE

    def __post_init__(self) -> None:
        _check_common(self.warp, self.bar_id, self.warp_threads)
        check_int("count", self.count)


@dataclass(frozen=True)
class Red:
    """``bar.red.{popc.u32|and.pred|or.pred} d, a{, b}, {!}c``: arrive, wait, reduce.

    ``value`` is the warp's contribution: for popc the number of its threads whose
    predicate is true, for and/or the warp-level conjunction/disjunction (bool)."""

    warp: int
    bar_id: int
    op: str
    value: int | bool
    count: int | None = None
    warp_threads: int = WARP_SIZE

    def __post_init__(self) -> None:
        _check_common(self.warp, self.bar_id, self.warp_threads)
        check_int("count", self.count, allow_none=True)
        if self.op not in RED_OPS:
            raise ValueError(f"op must be one of {RED_OPS}")

    @property
    def commutes(self) -> bool:  # as ``Sync.commutes``; popc, and, or are commutative
        return self.count is None


@dataclass(frozen=True)
class ExitedArrive:
    """Threads that exited count as arrived at a CTA-wide instance (§9.7.13.1):
    ``exited_threads`` of the CTA have exited; the instance of ``bar_id`` completes when they
    and the arrived threads make its count. Only for an instance whose count is the whole CTA
    (an explicit thread count names the threads that take part; exited ones do not)."""

    bar_id: int
    exited_threads: int
    commutes: ClassVar[bool] = True  # with the other commuting commands on its barrier (interpreter.dpor)

    def __post_init__(self) -> None:
        check_int("bar_id", self.bar_id)
        check_int("exited_threads", self.exited_threads)


Command = Union[Sync, Arrive, Red, ExitedArrive]


def _reduce(op: str, values: list) -> int | bool:
    if op == "popc":
        return sum(int(v) for v in values)
    if op == "and":
        return all(bool(v) for v in values)
    return any(bool(v) for v in values)


def step(state: NamedBarrierState, cmd: Command) -> Outcome:
    """Apply one warp-level barrier instruction; see the module docstring."""
    if isinstance(cmd, ExitedArrive):
        return _exited_arrive(state, cmd)
    if not isinstance(cmd, (Sync, Arrive, Red)):
        raise TypeError(f"not a named-barrier command: {cmd!r}")
    waiting_on = state.blocked_on(cmd.warp)
    if waiting_on is not None:
        return not_enabled(state, f"warp {cmd.warp} is blocked on barrier {waiting_on}")
    if not 0 <= cmd.bar_id < NUM_NAMED_BARRIERS:
        return reject(state, NAMED_ID, f"barrier id {cmd.bar_id} outside 0..15",
                      bar_id=cmd.bar_id)
    count = state.cta_threads if cmd.count is None else cmd.count
    if cmd.count is not None and not (
        cmd.count > 0 and cmd.count % WARP_SIZE == 0 and cmd.count <= state.max_count
    ):
        return reject(state, NAMED_COUNT,
                      f"thread count {cmd.count} is not a multiple of {WARP_SIZE} in "
                      f"[{WARP_SIZE}, {state.max_count}]", count=cmd.count)
    slot = state.slots[cmd.bar_id]
    if cmd.warp in slot.arrived:
        return reject(state, NAMED_REUSE,
                      f"warp {cmd.warp} arrives again on barrier {cmd.bar_id} before it reset",
                      warp=cmd.warp, bar_id=cmd.bar_id)
    mode = f"red.{cmd.op}" if isinstance(cmd, Red) else "sync"
    if not slot.idle and slot.mode != mode:
        return reject(state, NAMED_REUSE,
                      f"barrier {cmd.bar_id} is active as {slot.mode}; {mode} may not be "
                      f"mixed with it", warp=cmd.warp, bar_id=cmd.bar_id)
    if not slot.idle and slot.count != count:
        return reject(state, NAMED_COUNT,
                      f"barrier {cmd.bar_id} is active with count {slot.count}, warp "
                      f"{cmd.warp} uses {count}", count=count, active_count=slot.count)

    blocks = not isinstance(cmd, Arrive)
    arrived = slot.arrived | {cmd.warp}
    blocked = slot.blocked | {cmd.warp} if blocks else slot.blocked
    threads = slot.arrived_threads + cmd.warp_threads
    red_values = slot.red_values
    if isinstance(cmd, Red):
        red_values = tuple(sorted(red_values + ((cmd.warp, cmd.value),)))
    effects: list = [("arrived", cmd.bar_id, cmd.warp)]
    if threads >= count:
        released = tuple(sorted(blocked))
        effects.append(("barrier-completed", cmd.bar_id, released))
        value = None
        if isinstance(cmd, Red):
            value = _reduce(cmd.op, [v for _, v in red_values])
            effects.append(("red-result", cmd.bar_id, value))
        new_slot = BarrierSlot()
    else:
        if blocks:
            effects.append(("blocked", cmd.bar_id, cmd.warp))
        value = None
        new_slot = BarrierSlot(count, mode, arrived, blocked, threads, red_values)
    slots = state.slots[: cmd.bar_id] + (new_slot,) + state.slots[cmd.bar_id + 1:]
    return Outcome(replace(state, slots=slots), tuple(effects), value=value)


def _exited_arrive(state: NamedBarrierState, cmd: ExitedArrive) -> Outcome:
    slot = state.slots[cmd.bar_id] if 0 <= cmd.bar_id < NUM_NAMED_BARRIERS else None
    if slot is None or slot.idle or not cmd.exited_threads or slot.count != state.cta_threads \
            or slot.arrived_threads + cmd.exited_threads < slot.count:
        return Outcome(state)
    effects: list = [("barrier-completed", cmd.bar_id, tuple(sorted(slot.blocked)))]
    value = None
    if slot.mode and slot.mode != "sync":  # "red.<op>"
        value = _reduce(slot.mode[4:], [v for _, v in slot.red_values])
        effects.append(("red-result", cmd.bar_id, value))
    slots = state.slots[: cmd.bar_id] + (BarrierSlot(),) + state.slots[cmd.bar_id + 1:]
    return Outcome(replace(state, slots=slots), tuple(effects), value=value)


def run_on(state: NamedBarrierState, cmd: Command, violation: Violation) -> tuple[Violation, Outcome | None]:
    """A run goes on past a violation as if the warp arrived with the active instance's count
    (to find further problems); a second ``bar.arrive`` of a warp on an instance it already
    arrived on has no effect."""
    if violation.rule == NAMED_REUSE.id and isinstance(cmd, Arrive):
        return violation, None
    slot = state.slots[cmd.bar_id] if 0 <= cmd.bar_id < NUM_NAMED_BARRIERS else None
    if slot is None:
        return violation, None
    out = step(state, replace(cmd, count=slot.count) if slot.count else cmd)
    return violation, (out if out.violation is None else None)


PROTOCOL = Protocol("named barrier", step, run_on)


def waiting_for(state: NamedBarrierState, bar_id: int) -> str:
    """What a warp blocked on ``bar_id`` still needs, for the deadlock report."""
    slot = state.slots[bar_id]
    return (f"barrier {bar_id}: {slot.arrived_threads} of {slot.count} threads arrived "
            f"(warps {sorted(slot.arrived)})")


__all__ = ["ExitedArrive", "PROTOCOL", "run_on", "waiting_for",
    "NUM_NAMED_BARRIERS", "WARP_SIZE", "RED_OPS", "BarrierSlot", "NamedBarrierState", "Sync",
    "Arrive", "Red", "Command", "step", "RULES",
]

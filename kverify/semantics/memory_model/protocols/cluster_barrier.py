"""Cluster barrier: ``barrier.cluster.arrive{.release|.relaxed}`` / ``barrier.cluster.wait{.acquire}``.

Follows PTX ISA §9.7.13 ``barrier.cluster``
(``parallel-synchronization-and-communication-instructions-barrier-cluster``): every
non-exited thread of every CTA of the cluster arrives once per phase; ``wait`` blocks the
thread until all of them arrived in the phase it arrived in.  A thread arrives at most once
per phase: a second ``arrive`` before its ``wait`` is a violation, and so is a ``wait``
without a preceding ``arrive``.  ``.relaxed`` arrivals and ``.acquire`` waits are carried in
the effects for the memory-ordering layer; they do not change the protocol.

Threads are any hashable ids, e.g. ``(cta_rank, tid)``.  ``Exit(thread)`` removes a thread
from the participants (exited threads are not waited for).  A blocked ``wait`` reports
``("blocked", thread)`` and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Hashable, Union

from .common import Outcome, Protocol, Rule, not_enabled, reject

_BC = "parallel-synchronization-and-communication-instructions-barrier-cluster"

DOUBLE_ARRIVE = Rule(
    "cluster-barrier.double-arrive", "§9.7.13 barrier.cluster", _BC,
    "a thread executes barrier.cluster.arrive twice without a barrier.cluster.wait between",
)
WAIT_WITHOUT_ARRIVE = Rule(
    "cluster-barrier.wait-without-arrive", "§9.7.13 barrier.cluster", _BC,
    "barrier.cluster.wait by a thread that has not arrived in the current cycle",
)

RULES: tuple[Rule, ...] = (DOUBLE_ARRIVE, WAIT_WITHOUT_ARRIVE)


@dataclass(frozen=True)
class ClusterBarrierState:
    participants: frozenset  # non-exited threads of all CTAs of the cluster
    phase: int = 0
    arrived: frozenset = frozenset()  # threads arrived in the current phase
    tokens: tuple = ()  # sorted (repr, thread, phase arrived in) for threads not yet waited

    def token(self, thread: Hashable) -> int | None:
        for _, t, ph in self.tokens:
            if t == thread:
                return ph
        return None


@dataclass(frozen=True)
class Arrive:
    thread: Hashable
    relaxed: bool = False


@dataclass(frozen=True)
class Wait:
    thread: Hashable
    acquire: bool = True


@dataclass(frozen=True)
class Exit:
    thread: Hashable
    commutes: ClassVar[bool] = True  # with the other exits (interpreter.dpor)


Command = Union[Arrive, Wait, Exit]


def _maybe_complete(s: ClusterBarrierState, effects: list) -> ClusterBarrierState:
    if s.participants and s.participants <= s.arrived:
        effects.append(("phase-completed", s.phase))
        return replace(s, phase=s.phase + 1, arrived=frozenset())
    return s


def step(state: ClusterBarrierState, cmd: Command) -> Outcome:
    if not isinstance(cmd, (Arrive, Wait, Exit)):
        raise TypeError(f"not a cluster-barrier command: {cmd!r}")
    if cmd.thread not in state.participants:
        return not_enabled(state, f"thread {cmd.thread!r} is not a live thread of the cluster")
    if isinstance(cmd, Arrive):
        if state.token(cmd.thread) is not None:
            return reject(state, DOUBLE_ARRIVE,
                          f"thread {cmd.thread!r} arrives again before barrier.cluster.wait",
                          thread=cmd.thread)
        tokens = tuple(sorted(state.tokens + ((repr(cmd.thread), cmd.thread, state.phase),),
                              key=lambda e: e[0]))
        effects: list = [("arrived", cmd.thread, "relaxed" if cmd.relaxed else "release")]
        new = _maybe_complete(
            replace(state, arrived=state.arrived | {cmd.thread}, tokens=tokens), effects)
        return Outcome(new, tuple(effects))
    if isinstance(cmd, Wait):
        ph = state.token(cmd.thread)
        if ph is None:
            return reject(state, WAIT_WITHOUT_ARRIVE,
                          f"thread {cmd.thread!r} waits without arriving first", thread=cmd.thread)
        if state.phase <= ph:
            return Outcome(state, (("blocked", cmd.thread),))
        tokens = tuple(e for e in state.tokens if e[1] != cmd.thread)
        return Outcome(replace(state, tokens=tokens),
                       (("wait-satisfied", cmd.thread, "acquire" if cmd.acquire else "relaxed"),))
    # Exit
    effects = [("exited", cmd.thread)]
    new = replace(
        state,
        participants=state.participants - {cmd.thread},
        arrived=state.arrived - {cmd.thread},
        tokens=tuple(e for e in state.tokens if e[1] != cmd.thread),
    )
    return Outcome(_maybe_complete(new, effects), tuple(effects))


PROTOCOL = Protocol("cluster barrier", step)


def waiting_for(state: ClusterBarrierState, thread: Hashable) -> str:
    """What ``thread``'s wait still needs, for the deadlock report."""
    return (f"the cluster barrier (phase {state.token(thread)}): {len(state.arrived)} of "
            f"{len(state.participants)} participants arrived")


__all__ = ["PROTOCOL", "waiting_for", "ClusterBarrierState", "Arrive", "Wait", "Exit", "Command", "step", "RULES"]

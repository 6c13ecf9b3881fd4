"""Shared vocabulary of the synchronization-protocol step functions.

Every protocol (mbarrier, CTA named barriers, async groups, cluster barrier) is a frozen,
hashable state plus one pure function ``step(state, command) -> Outcome``.  A step is

* deterministic: the same (state, command) always gives an equal ``Outcome``;
* total: it never raises on a bad *program*: undefined behaviour is reported as a
  ``Violation`` value, never as an exception;
* transactional: when ``Outcome.violation`` is set, ``Outcome.state`` is the input state,
  unchanged, and ``Outcome.effects`` is empty.

Malformed *commands* (a wrong Python type, a parity of 7) are rejected when the command is
constructed (``ValueError``/``TypeError``): that is a bug in the caller, not in the kernel.
Events that cannot happen in the current state (a warp blocked on a barrier issuing an
instruction, an async unit completing an operation that is not in flight) are reported as
the effect ``("not-enabled", reason)`` with the state unchanged; they are scheduler errors,
not kernel bugs, and never violations.

Effects are plain tuples whose first element is a kind string, e.g.
``("phase-completed", 3)`` or ``("wait-result", True)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kverify.rules import ANCHOR_BASE  # noqa: F401  (re-exported)
from kverify.rules import Rule as _Rule


@dataclass(frozen=True)
class Rule(_Rule):
    """A protocol rule (registered in ``kverify.rules``) that a step reports as a violation."""

    def violation(self, message: str, **details: Any) -> "Violation":
        return Violation(
            rule=self.id,
            message=message,
            section=self.section,
            anchor=self.anchor,
            details=tuple(sorted(details.items())),
        )


@dataclass(frozen=True)
class Violation:
    """Undefined behaviour (or a broken protocol obligation) detected by a step."""

    rule: str
    message: str
    section: str
    anchor: str = ""
    details: tuple[tuple[str, Any], ...] = ()

    def detail(self, key: str, default: Any = None) -> Any:
        for k, v in self.details:
            if k == key:
                return v
        return default

    def __str__(self) -> str:
        return f"{self.rule}: {self.message} [{self.section}]"


@dataclass(frozen=True)
class Outcome:
    """Result of one step: the new state, the observable events, and maybe a violation.

    ``value`` is the instruction's result where it has one (the ``state`` token returned
    by ``mbarrier.arrive``, the boolean of ``mbarrier.test_wait``, the ``bar.red`` result).
    """

    state: Any
    effects: tuple = ()
    violation: Violation | None = None
    value: Any = None

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def rule(self) -> str | None:
        return None if self.violation is None else self.violation.rule

    def effect(self, kind: str) -> tuple | None:
        """The first effect of the given kind, or None."""
        for e in self.effects:
            if e[0] == kind:
                return e
        return None

    def has(self, kind: str) -> bool:
        return self.effect(kind) is not None


def stop(state: Any, cmd: Any, violation: Violation) -> tuple[Violation, Outcome | None]:
    """The default run-on policy: report the violation, the command has no effect."""
    return violation, None


@dataclass(frozen=True)
class Protocol:
    """A protocol as a run drives it. ``step`` is the pure step function; ``run_on(state,
    command, violation) -> (finding, outcome or None)`` says, for a run that goes on past a
    violation of ``step(state, command)``, which finding to report and the outcome the
    hardware reaches (``None``: the command has no effect)."""

    name: str
    step: Callable[[Any, Any], Outcome]
    run_on: Callable[[Any, Any, Violation], tuple] = stop


def reject(state: Any, rule: Rule, message: str, **details: Any) -> Outcome:
    """The transactional failure outcome: state unchanged, no effects, one violation."""
    return Outcome(state=state, effects=(), violation=rule.violation(message, **details))


def not_enabled(state: Any, reason: str) -> Outcome:
    """A scheduler asked for an event that cannot happen now: nothing changes."""
    return Outcome(state=state, effects=(("not-enabled", reason),))


def check_int(name: str, value: Any, *, allow_none: bool = False) -> None:
    """Constructor-time check that an operand is a Python int (bool excluded)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")


__all__ = ["ANCHOR_BASE", "Rule", "Violation", "Outcome", "Protocol", "stop", "reject", "not_enabled", "check_int"]

"""mbarrier objects: state, commands and the transactional step function.

Owns the lifecycle (init/inval), arrive-on (arrive, arrive.expect_tx, arrive_drop,
.noComplete, remote .shared::cluster arrivals), tx-count tracking (expect-tx, complete-tx,
which is also what a ``cp.async.bulk ... .mbarrier::complete_tx::bytes`` completion does),
phase completion, and the test_wait/try_wait rules (parity/state forms, aliasing, the
obligation that every completed phase is observed before the next phase is arrived on).

Follows PTX ISA §9.7.13.15 (``parallel-synchronization-and-communication-instructions-mbarrier``
and its sub-anchors ``-contents``, ``-lifecycle``, ``-phase``,
``-tracking-async-operations``, ``-phase-completion``, ``-arrive-on``, ``-init``,
``-inval``, ``-expect-tx``, ``-complete-tx``, ``-arrive``, ``-arrive-drop``,
``-test-wait-try-wait``, ``-smem``).  Section numbers follow PTX 9.x as quoted in
``shared/reference/ptx-sync-semantics.md``; the anchors are the stable citation.

Model:
  * ``phase`` is an unbounded integer (hardware exposes only its parity);
  * ``pending`` counts arrivals still missing in the current phase, ``expected`` is the
    value ``pending`` is reloaded with at phase completion, ``tx`` is the tx-count;
  * a phase completes exactly when ``pending == 0 and tx == 0``: ``phase += 1``,
    ``pending := expected``;  so an initialized barrier never rests in a state with
    ``pending == 0 and tx == 0``;
  * ``observed_prev`` records whether the most recently completed phase has been observed
    by a wait that returned True (vacuously True before the first completion).

Check order inside one command (the first failing check is reported; the reference model
in ``reference.py`` follows the same documented order):
  Arrive:     uninitialized, arrive-count, tx-range (operand), parity (unobserved previous
              phase), arrival-overflow (arrive_drop would make expected < 1),
              arrival-overflow (pending would go below 0), tx-range (result),
              no-complete.
  ExpectTx / CompleteTx: uninitialized, tx-range (operand), tx-range (result).
  TestWait:   uninitialized, remote-wait, parity (aliasing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from .common import Outcome, Protocol, Rule, Violation, check_int, reject

_MB = "parallel-synchronization-and-communication-instructions-mbarrier"

# --------------------------------------------------------------------------- rules

UNINITIALIZED = Rule(
    "mbarrier.uninitialized",
    "§9.7.13.15.3 mbarrier lifecycle (mbarrier.init / mbarrier.inval)",
    _MB + "-init",
    "any mbarrier operation other than init on an uninitialized or invalidated barrier",
)
REINIT = Rule(
    "mbarrier.reinit",
    "§9.7.13.15.3 mbarrier lifecycle (mbarrier.init)",
    _MB + "-init",
    "mbarrier.init on a location that holds a valid mbarrier (no mbarrier.inval first)",
)
INIT_REPLICATED = Rule(
    "mbarrier.init-replicated",
    "§9.7.13.15.3 mbarrier lifecycle (mbarrier.init on a valid mbarrier is undefined)",
    _MB + "-init",
    "lanes of one warp execute the same mbarrier.init on the same barrier with the same count "
    "(every lane but the first initializes a valid mbarrier: undefined by the ISA's letter; one "
    "initialization on current hardware, and the interpreter performs it once)",
    severity="warning",
)
INIT_COUNT = Rule(
    "mbarrier.init-count",
    "§9.7.13.15.2 contents of the mbarrier object (mbarrier.init)",
    _MB + "-contents",
    "mbarrier.init count outside [1, 2^20-1] (layout v0)",
)
ARRIVE_COUNT = Rule(
    "mbarrier.arrive-count",
    "§9.7.13.15.16 mbarrier.arrive / mbarrier.arrive_drop",
    _MB + "-arrive",
    "arrive count operand outside [1, 2^20-1] (the valid range of the pending count)",
)
ARRIVAL_OVERFLOW = Rule(
    "mbarrier.arrival-overflow",
    "§9.7.13.15.2 contents of the mbarrier object; §9.7.13.15.7 arrive-on operation",
    _MB + "-arrive-on",
    "pending count driven below 0 (too many arrivals, incl. an arrive while pending==0 and "
    "tx!=0), or arrive_drop driving the expected count below 1",
)
TX_RANGE = Rule(
    "mbarrier.tx-range",
    "§9.7.13.15.5 tracking asynchronous operations (expect-tx / complete-tx)",
    _MB + "-tracking-async-operations",
    "tx-count operand outside [0, 2^20-1] or tx-count leaving [-(2^20-1), 2^20-1]",
)
NO_COMPLETE = Rule(
    "mbarrier.no-complete",
    "§9.7.13.15.16 mbarrier.arrive (.noComplete)",
    _MB + "-arrive",
    "an arrive/arrive_drop with .noComplete that would complete the current phase",
)
PARITY = Rule(
    "mbarrier.parity",
    "§9.7.13.15.4 phase of the mbarrier object; mbarrier.test_wait/try_wait",
    _MB + "-test-wait-try-wait",
    "a wait naming a phase that is neither the current incomplete phase nor the "
    "immediately preceding one (aliasing), or an arrive-on in phase k+1 before any wait "
    "observed the completion of phase k",
)
INIT_VISIBILITY = Rule(
    "mbarrier.init-visibility",
    "§9.7.13.15.3 mbarrier lifecycle (mbarrier.init); §9.7.12.4 fence.mbarrier_init",
    _MB + "-init",
    "a use of an mbarrier by a thread its mbarrier.init does not happen before (a barrier or "
    "fence.mbarrier_init must make the init visible), or a remote arrive on a barrier whose "
    "init was not followed by fence.mbarrier_init.release.cluster",
)
INIT_FENCE = Rule(
    "mbarrier.init-fence",
    "§9.7.13.15.3 mbarrier lifecycle (mbarrier.init); §9.7.12.4 fence.mbarrier_init, fence.proxy.async; "
    "CUDA C++ Programming Guide, TMA (the init made visible to the async proxy)",
    _MB + "-init",
    "a TMA/bulk copy completes tx on an mbarrier whose mbarrier.init the initializing thread did not follow "
    "with fence.mbarrier_init (or fence.proxy.async) before the copy was issued (the init reaches the copy "
    "only through a barrier or program order): the CUDA guide and CUTLASS fence it, and CUTLASS, "
    "FlashAttention-3 and FlashKDA added the missing fence as a fix; Triton 3.6 omits it",
    severity="warning",
)
TX_MISMATCH = Rule(
    "mbarrier.tx-mismatch",
    "§9.7.13.15.5 tracking asynchronous operations (expect-tx / complete-tx)",
    _MB + "-tracking-async-operations",
    "the expect-tx bytes of a phase do not match the bytes its copies complete: the barrier "
    "is stuck with tx-count != 0 once nothing in flight signals it, or a phase completes "
    "while copies counted into it are still in flight",
)
REMOTE_WAIT = Rule(
    "mbarrier.remote-wait",
    "§9.7.13.15 mbarrier in .shared::cluster (waits must be local)",
    _MB + "-smem",
    "test_wait/try_wait on a barrier in another CTA's shared memory (.shared::cluster)",
)

RULES: tuple[Rule, ...] = (
    UNINITIALIZED, REINIT, INIT_REPLICATED, INIT_COUNT, ARRIVE_COUNT, ARRIVAL_OVERFLOW, TX_RANGE,
    NO_COMPLETE, PARITY, REMOTE_WAIT, INIT_VISIBILITY, INIT_FENCE, TX_MISMATCH,
)

# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class Limits:
    """Valid ranges of the mbarrier fields for one object layout."""

    max_count: int  # expected in [1, max_count], pending in [0, max_count]
    max_tx: int  # tx in [-max_tx, max_tx]; a tx operand in [0, max_tx]


LAYOUT_V0 = Limits(max_count=2**20 - 1, max_tx=2**20 - 1)
# Layout v1 restricts the arrival counts to 2^9 - 1 (reference A1); tx range unchanged.
LAYOUT_V1 = Limits(max_count=2**9 - 1, max_tx=2**20 - 1)


@dataclass(frozen=True)
class MbarrierState:
    initialized: bool = False
    phase: int = 0
    pending: int = 0
    expected: int = 0
    tx: int = 0
    observed_prev: bool = True
    limits: Limits = LAYOUT_V0

    @property
    def parity(self) -> int:
        return self.phase % 2

    @classmethod
    def initialized_with(cls, count: int, limits: Limits = LAYOUT_V0) -> "MbarrierState":
        """The state right after a legal ``mbarrier.init [bar], count``."""
        return cls(True, 0, count, count, 0, True, limits)


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Init:
    """``mbarrier.init.shared::cta.b64 [bar], count``."""

    count: int

    def __post_init__(self) -> None:
        check_int("count", self.count)


@dataclass(frozen=True)
class Inval:
    """``mbarrier.inval.shared::cta.b64 [bar]``."""


@dataclass(frozen=True)
class Arrive:
    """An arrive-on operation.

    ``mbarrier.arrive{.noComplete}`` (``count`` arrivals), ``mbarrier.arrive.expect_tx``
    (``expect_tx`` bytes are expected, *then* the arrive, atomically), ``arrive_drop``
    (``drop=True``: expected -= count for later phases, then arrive(count)), and the
    asynchronous arrive of ``cp.async.mbarrier.arrive`` / ``tcgen05.commit``.
    ``remote=True``: the barrier lives in another CTA (``.shared::cluster``); the
    instruction then returns no state token.
    """

    count: int = 1
    expect_tx: int = 0
    no_complete: bool = False
    drop: bool = False
    remote: bool = False

    def __post_init__(self) -> None:
        check_int("count", self.count)
        check_int("expect_tx", self.expect_tx)


@dataclass(frozen=True)
class ExpectTx:
    """``mbarrier.expect_tx`` (or the expect-tx half of ``arrive.expect_tx``): tx += bytes."""

    bytes: int

    def __post_init__(self) -> None:
        check_int("bytes", self.bytes)


@dataclass(frozen=True)
class CompleteTx:
    """complete-tx: ``mbarrier.complete_tx`` or the completion of a bulk copy signalling
    this barrier (``.mbarrier::complete_tx::bytes``): tx -= bytes, then maybe complete."""

    bytes: int

    def __post_init__(self) -> None:
        check_int("bytes", self.bytes)


@dataclass(frozen=True)
class CpAsyncArriveIssue:
    """Issue of ``cp.async.mbarrier.arrive{.noinc}``.

    Without ``.noinc`` the pending count is incremented by one now; the asynchronous
    arrive-on that follows when the thread's prior cp.async complete is an ``Arrive()``
    issued by the caller at that point.  With ``.noinc`` nothing changes now.
    """

    noinc: bool = False


@dataclass(frozen=True)
class TestWait:
    """``mbarrier.test_wait`` / ``mbarrier.try_wait`` (``.parity`` or ``state`` form).

    Exactly one of ``parity`` (0 or 1) and ``state_phase`` (the phase the state token
    returned by ``arrive`` names) is given.  ``waiter_phase`` (parity form only) is the
    phase whose completion the waiter believes it awaits; it must agree with ``parity``
    and enables the aliasing check ``phase - waiter_phase in {0, 1}``.
    ``timed_out=True`` models a try_wait that returned False because its time limit
    elapsed (legal at any time; nothing is observed).
    """

    __test__ = False  # not a pytest test class

    parity: int | None = None
    state_phase: int | None = None
    waiter_phase: int | None = None
    remote: bool = False
    timed_out: bool = False

    def __post_init__(self) -> None:
        check_int("parity", self.parity, allow_none=True)
        check_int("state_phase", self.state_phase, allow_none=True)
        check_int("waiter_phase", self.waiter_phase, allow_none=True)
        if (self.parity is None) == (self.state_phase is None):
            raise ValueError("give exactly one of parity and state_phase")
        if self.parity is not None and self.parity not in (0, 1):
            raise ValueError("parity must be 0 or 1")
        if self.waiter_phase is not None:
            if self.parity is None:
                raise ValueError("waiter_phase is for the parity form; state names the phase")
            if self.waiter_phase % 2 != self.parity:
                raise ValueError("waiter_phase disagrees with parity")

    @property
    def named_phase(self) -> int | None:
        return self.state_phase if self.state_phase is not None else self.waiter_phase


Command = Union[Init, Inval, Arrive, ExpectTx, CompleteTx, CpAsyncArriveIssue, TestWait]

# --------------------------------------------------------------------------- step


def _settle(s: MbarrierState, pending: int, tx: int, effects: list) -> MbarrierState:
    """Store pending/tx and apply the phase-completion rule."""
    if pending == 0 and tx == 0:
        effects.append(("phase-completed", s.phase))
        return replace(s, phase=s.phase + 1, pending=s.expected, tx=0, observed_prev=False)
    return replace(s, pending=pending, tx=tx)


def step(state: MbarrierState, cmd: Command) -> Outcome:
    """Apply one mbarrier command; see the module docstring for the rules and their order."""
    if isinstance(cmd, Init):
        return _init(state, cmd)
    if not state.initialized:
        return reject(state, UNINITIALIZED,
                      f"{type(cmd).__name__} on an uninitialized/invalidated mbarrier",
                      command=type(cmd).__name__)
    if isinstance(cmd, Inval):
        return Outcome(MbarrierState(limits=state.limits), (("invalidated",),))
    if isinstance(cmd, Arrive):
        return _arrive(state, cmd)
    if isinstance(cmd, ExpectTx):
        return _tx(state, cmd.bytes, +1, "expect-tx")
    if isinstance(cmd, CompleteTx):
        return _tx(state, cmd.bytes, -1, "complete-tx")
    if isinstance(cmd, CpAsyncArriveIssue):
        return _cp_async_issue(state, cmd)
    if isinstance(cmd, TestWait):
        return _test_wait(state, cmd)
    raise TypeError(f"not an mbarrier command: {cmd!r}")


def _init(s: MbarrierState, cmd: Init) -> Outcome:
    if s.initialized:
        return reject(s, REINIT, "mbarrier.init on a valid mbarrier without mbarrier.inval",
                      phase=s.phase)
    if not 1 <= cmd.count <= s.limits.max_count:
        return reject(s, INIT_COUNT,
                      f"mbarrier.init count {cmd.count} outside [1, {s.limits.max_count}]",
                      count=cmd.count)
    return Outcome(MbarrierState.initialized_with(cmd.count, s.limits), (("initialized", cmd.count),))


def _arrive(s: MbarrierState, cmd: Arrive) -> Outcome:
    lim = s.limits
    if not 1 <= cmd.count <= lim.max_count:
        return reject(s, ARRIVE_COUNT, f"arrive count {cmd.count} outside [1, {lim.max_count}]",
                      count=cmd.count)
    if not 0 <= cmd.expect_tx <= lim.max_tx:
        return reject(s, TX_RANGE, f"expect_tx operand {cmd.expect_tx} outside [0, {lim.max_tx}]",
                      operand=cmd.expect_tx)
    if not s.observed_prev:
        return reject(
            s, PARITY,
            f"arrive-on in phase {s.phase} before any test_wait/try_wait observed the "
            f"completion of phase {s.phase - 1} (phase not observed)",
            kind="unobserved-phase", phase=s.phase,
        )
    expected = s.expected
    if cmd.drop:
        expected -= cmd.count
        if expected < 1:
            return reject(s, ARRIVAL_OVERFLOW,
                          f"arrive_drop({cmd.count}) drives the expected count from "
                          f"{s.expected} to {expected}", kind="expected", expected=expected)
    pending = s.pending - cmd.count
    if pending < 0:
        held = " (phase held open only by tx-count)" if s.pending == 0 else ""
        return reject(s, ARRIVAL_OVERFLOW,
                      f"arrive({cmd.count}) with pending count {s.pending}{held}",
                      kind="pending", pending=s.pending, count=cmd.count)
    tx = s.tx + cmd.expect_tx
    if tx > lim.max_tx:
        return reject(s, TX_RANGE, f"tx-count {s.tx} + {cmd.expect_tx} exceeds {lim.max_tx}",
                      tx=tx)
    if cmd.no_complete and pending == 0 and tx == 0:
        return reject(s, NO_COMPLETE, f".noComplete arrive would complete phase {s.phase}",
                      phase=s.phase)
    effects: list = []
    if cmd.expect_tx:
        effects.append(("expect-tx", cmd.expect_tx))
    effects.append(("arrived", cmd.count))
    new = _settle(replace(s, expected=expected), pending, tx, effects)
    return Outcome(new, tuple(effects), value=None if cmd.remote else s.phase)


def _tx(s: MbarrierState, operand: int, sign: int, kind: str) -> Outcome:
    lim = s.limits
    if not 0 <= operand <= lim.max_tx:
        return reject(s, TX_RANGE, f"{kind} operand {operand} outside [0, {lim.max_tx}]",
                      operand=operand)
    tx = s.tx + sign * operand
    if not -lim.max_tx <= tx <= lim.max_tx:
        return reject(s, TX_RANGE, f"{kind} moves tx-count from {s.tx} to {tx}", tx=tx)
    effects: list = [(kind, operand)]
    return Outcome(_settle(s, s.pending, tx, effects), tuple(effects))


def _cp_async_issue(s: MbarrierState, cmd: CpAsyncArriveIssue) -> Outcome:
    if cmd.noinc:
        return Outcome(s, (("cp-async-arrive-pending", "noinc"),))
    if s.pending + 1 > s.limits.max_count:
        return reject(s, ARRIVAL_OVERFLOW, "cp.async.mbarrier.arrive increment overflows pending",
                      kind="increment", pending=s.pending)
    return Outcome(replace(s, pending=s.pending + 1), (("cp-async-arrive-pending", "inc"),))


def _test_wait(s: MbarrierState, cmd: TestWait) -> Outcome:
    if cmd.remote:
        return reject(s, REMOTE_WAIT, "test_wait/try_wait on a .shared::cluster (remote) mbarrier")
    named = cmd.named_phase
    if named is not None and s.phase - named not in (0, 1):
        return reject(
            s, PARITY,
            f"wait names phase {named} but the barrier is in phase {s.phase}: only the "
            f"current incomplete phase or the immediately preceding one may be waited on",
            kind="aliasing", phase=s.phase, waited=named,
        )
    if named is not None:
        complete = s.phase - named == 1
    else:
        complete = s.phase % 2 != cmd.parity
    result = complete and not cmd.timed_out
    new = replace(s, observed_prev=True) if result else s
    return Outcome(new, (("wait-result", result),), value=result)


# --------------------------------------------------------------------------- a run of the protocol
#
# The rules below need facts a state does not hold (happens-before between threads, the
# copies still in flight): the run that drives the barrier observes them and asks.


def run_on(state: MbarrierState, cmd: Command, violation: Violation) -> tuple[Violation, Outcome | None]:
    """How a run goes on past ``violation`` of ``step(state, cmd)``: the finding and the
    outcome the hardware reaches (``None``: the command has no effect).

    An arrive-on in phase k+1 before any wait observed phase k: on hardware the arrival
    simply counts toward phase k+1, so phase k received more arrivals than its expected
    count before anyone observed it: reported as ``mbarrier.arrival-overflow``, and the
    arrival counts toward the current phase."""
    if violation.detail("kind") != "unobserved-phase":
        return violation, None
    finding = ARRIVAL_OVERFLOW.violation(
        f"{violation.message}: the arrival counts toward phase {state.phase}, so phase "
        f"{state.phase - 1} received more arrivals than its expected count {state.expected} "
        f"before anyone observed it", **dict(violation.details))
    out = step(replace(state, observed_prev=True), cmd)
    return finding, (out if out.violation is None else None)


PROTOCOL = Protocol("mbarrier", step, run_on)


def init_visibility(ordered_after_init: bool, who: str) -> Violation | None:
    """A use by ``who``: the barrier's mbarrier.init must happen before it."""
    if ordered_after_init:
        return None
    return INIT_VISIBILITY.violation(
        f"{who} uses the mbarrier with no happens-before edge from its mbarrier.init (a barrier / "
        f"fence.mbarrier_init must make the init visible first; §9.7.13.15.3)")


def remote_init_visibility(fenced: bool, who: str) -> Violation | None:
    """A remote (``.shared::cluster``) arrive by ``who``: the init must have been followed by
    ``fence.mbarrier_init.release.cluster``."""
    if fenced:
        return None
    return INIT_VISIBILITY.violation(
        f"remote arrive by {who} on an mbarrier whose init was not followed by "
        f"fence.mbarrier_init.release.cluster (§9.7.13.15.3, §9.7.12.4)")


def init_fenced(fenced: bool, who: str) -> Violation | None:
    """A copy's complete-tx by ``who`` (an async-proxy agent): the initializing thread must have
    fenced the init (fence.mbarrier_init or fence.proxy.async) before the copy was issued."""
    if fenced:
        return None
    return INIT_FENCE.violation(
        f"{who} completes tx on an mbarrier whose init was not followed by fence.mbarrier_init (or "
        f"fence.proxy.async) in the initializing thread before the copy was issued: the init reaches the copy's "
        f"complete-tx only through a barrier or program order (§9.7.13.15.3, §9.7.12.4)")


def quiescent(state: MbarrierState, signalling_in_flight: bool) -> Violation | None:
    """The run can no longer progress (every warp blocked): a barrier stuck with tx-count
    != 0 while no copy in flight signals it never completes its phase."""
    if not state.initialized or state.tx == 0 or signalling_in_flight:
        return None
    how = "more bytes completed than expected" if state.tx < 0 else "expected bytes never arrive"
    return TX_MISMATCH.violation(
        f"stuck in phase {state.phase} with tx-count {state.tx}: {how} (the expect-tx bytes do "
        f"not match the copies that signal it; §9.7.13.15.5)", tx=state.tx)


def completed_in_flight(phase: int, copies: int, nbytes: int) -> Violation | None:
    """Phase ``phase`` completed while ``copies`` copies signalling the barrier (``nbytes`` in
    all) were still in flight: expect-tx announced fewer bytes than the copies deliver."""
    if not copies:
        return None
    return TX_MISMATCH.violation(
        f"phase {phase} completed while {copies} copy(ies) signalling it were still in flight "
        f"({nbytes} bytes): expect-tx announced fewer bytes than the copies deliver (§9.7.13.15.5)")


def waited_phase(state: MbarrierState, parity: int, next_unobserved: int | None) -> tuple[int | None, Violation | None]:
    """The phase a parity wait names, as its waiter sees it: ``next_unobserved`` is the phase
    after the last one this waiter observed complete (``None``: it observed none yet, so the
    current phase or the one before, whichever has the parity). A parity that names a phase
    the waiter already observed complete is a violation: the wait returns at once, the
    parity does not flip (§9.7.13.15.4); then no phase is named (``None``)."""
    if next_unobserved is None:
        return (state.phase if state.phase % 2 == parity else state.phase - 1), None
    if next_unobserved % 2 == parity:
        return next_unobserved, None
    named = next_unobserved - 1
    return None, PARITY.violation(
        f"waits with parity {parity}, which names phase {named} that this warp already observed "
        f"complete: the wait returns at once (the parity does not flip; §9.7.13.15.4)", phase=named)


def waiting_for(state: MbarrierState) -> str:
    """What a wait on this barrier still needs, for the deadlock report."""
    return (f"barrier in phase {state.phase}: {state.pending} of {state.expected} arrivals missing, "
            f"tx-count {state.tx}")


__all__ = [
    "PROTOCOL", "run_on", "waited_phase", "init_visibility", "remote_init_visibility", "quiescent", "completed_in_flight",
    "waiting_for", "Limits", "LAYOUT_V0", "LAYOUT_V1", "MbarrierState", "Init", "Inval", "Arrive", "ExpectTx",
    "CompleteTx", "CpAsyncArriveIssue", "TestWait", "Command", "step", "RULES",
]

"""Solver limits that do not depend on the machine. A verdict must come out the same on a
loaded machine as on an idle one, so every solver query is bounded by a ``SolverBudget``: a
number of z3 resource units (z3's ``rlimit``, which counts the solver's own work), written
for users in *solver seconds* — ``--timeout S`` is ``S * RLIMIT_PER_SECOND`` units, about S
seconds of z3 on the 2-core x86 machine the benchmarks name. A budget is spent across the
queries of one obligation (``restart`` gives the next obligation its own).

A verdict should also come out the same whatever ran before it in the process (a test suite, a
check server's earlier requests): z3's work on a query depends on the numbering of its terms,
and in the shared context that numbering is the process's history -- the same may-alias query
took 0.1 million units in one process and hit a 2 million cap in another. So a budget's
queries run in a context of its own (made afresh by ``restart``, one per obligation), into
which each query is copied: the numbering is the obligation's own. That removes most of the
dependence, not all of it (z3 keeps some state per process: on one obligation's 60 queries,
processes that had solved different things before spent the same units on each, but for one
that had solved nothing), so a query whose answer matters is kept far from its cap rather
than trusted to land on the same side of it. A model comes back in the shared context
(``model`` / ``solve``). ``z3.Optimize`` queries, which z3 cannot copy, run in the shared one.

A wall-clock backstop of ``BACKSTOP`` times the budget's seconds (at least ``BACKSTOP_FLOOR_S``,
so a small budget on a loaded machine runs out of units, not of time) guards against work z3
does not meter; a query stopped by it is the only answer that can depend on load, and
``backstop_hit`` says so.
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time
from contextlib import contextmanager
from functools import cache

import z3

#: z3 resource units per solver second (measured on the benchmark machine: the zoo's heaviest
#: proofs run at 2-4 million units per second of z3 time).
RLIMIT_PER_SECOND = 5_000_000
BACKSTOP = 10
BACKSTOP_FLOOR_S = 30.0
#: units the first attempt of ``SolverBudget.solve`` (z3's SMT core alone) may spend before the
#: query goes to z3's default solver: on the zoo's queries the core answers in 40-60 % of the
#: default solver's time, and is far slower on a few hard ones
FAST_UNITS = 250_000


@cache
def _probe() -> z3.Solver:
    s = z3.Solver()
    s.check()
    return s


def _count() -> int:
    """z3's cumulative resource count in this process. A solver's statistics report the count
    of the whole context at the time they are read, so one solver, checked once (2 units), is
    read every time: a tenth of a millisecond, where a fresh solver and query take one."""
    return _probe().statistics().get_key_value("rlimit count")


_EXPORT: dict | None = None  # set by ``export_smt``: where every query checked is written


@contextmanager
def export_smt(directory: str, prefix: str = "kernel"):
    """While active, every query a ``SolverBudget`` checks is written to ``directory`` as
    SMT-LIB2 (``z3.Solver.to_smt2``), one file per query:
    ``PREFIX.OBLIGATION.NNNN.RESULT.smt2`` (RESULT is z3's answer: sat, unsat or unknown)."""
    global _EXPORT
    os.makedirs(directory, exist_ok=True)
    old, _EXPORT = _EXPORT, {"dir": directory, "prefix": re.sub(r"[^\w.-]", "_", prefix), "n": 0}
    try:
        yield
    finally:
        _EXPORT = old


def _export(s, label: str, r, assumptions) -> None:
    e = _EXPORT
    e["n"] += 1
    text = s.to_smt2() if isinstance(s, z3.Solver) and not assumptions else s.sexpr() + "\n(check-sat)\n"
    if assumptions:
        text = "; assumptions passed to check(): " + " ".join(str(a) for a in assumptions) + "\n" + text
    safe = re.sub(r"[^\w.-]", "_", label)
    name = f"{e['prefix']}.{safe}.{e['n']:04d}.{r}.smt2"
    with open(os.path.join(e["dir"], name), "w") as fh:
        fh.write(f"; kverify obligation {label}: z3 answered {r}\n{text}")


_INTERRUPTED = [False]
_RUNNING: list = [None]  # the z3 context whose query runs now (``watch_interrupts`` interrupts it)


def watch_interrupts() -> None:
    """Ctrl-C (SIGINT) stops the command, wherever it comes. z3 does not take the signal itself
    (``ctrl_c`` off on every query): its handler, installed for the length of a query, cancels the
    query only if the solver looks again before its answer is made, and a signal that came in the
    last moments was gone, the check running on to a verdict. Python's handler records it
    instead, and, since Python runs a handler only between its own steps, a thread woken by the
    signal (``signal.set_wakeup_fd``) interrupts the query z3 is solving. The handler raises
    ``KeyboardInterrupt``; one raised while an object is being freed (a z3 term's ``__del__``,
    which runs anywhere with the collector off) is printed and dropped by Python, so it is also
    remembered: the next solver query raises it again, and ``interrupted()`` tells the command
    line at the end. For the ``kverify`` command (cold or a check server's child), not a library
    caller."""
    import threading

    def on_sigint(signum, frame):
        _INTERRUPTED[0] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def wake():
        while True:
            if signal.SIGINT in os.read(r, 64):
                _INTERRUPTED[0] = True
                ctx = _RUNNING[0]
                if ctx is not None:
                    ctx.interrupt()

    threading.Thread(target=wake, name="kverify-ctrl-c", daemon=True).start()
    default = sys.unraisablehook

    def unraisable(u):  # the dropped interrupt is remembered, not printed
        if not (isinstance(u.exc_type, type) and issubclass(u.exc_type, KeyboardInterrupt)):
            default(u)

    sys.unraisablehook = unraisable


def interrupted() -> bool:
    """Whether Ctrl-C came during this command (``watch_interrupts``)."""
    return _INTERRUPTED[0]


class _Context(z3.Context):
    """A z3 context whose construction a Ctrl-C may cut short: z3's destructor reads ``owner``,
    which ``__init__`` sets only once the context exists (an ``AttributeError`` printed on the way
    out of an interrupted command, where one line is all it may print)."""

    owner = False


class SolverBudget:
    """``seconds`` of solver work in resource units; ``check(s)`` runs one query within what is
    left and charges what it used; ``solve(*fs)`` builds the solver for it (the SMT core first).
    ``label`` names the obligation its queries belong to (the file names ``export_smt`` writes).
    Queries run in the budget's own z3 context (module docstring); ``model`` is the last
    satisfying one's model, in the shared context."""

    def __init__(self, seconds: float, label: str = "query"):
        self.label = label
        self.seconds = max(float(seconds), 0.001)
        self.restart()

    def restart(self) -> "SolverBudget":
        self.units = int(self.seconds * RLIMIT_PER_SECOND)  # (a caller may have capped them)
        self.spent = 0
        self.backstop_hit = False
        self._t0 = time.perf_counter()
        self._ctx = None  # this obligation's z3 context, made by its first query
        self._ctx_units = 0  # its resource count after the last query
        self.model = None
        return self

    @contextmanager
    def capped(self, units: int):
        """At most ``units`` of what is left for the queries inside: a query that may not be worth
        the whole budget (a may-alias test whose ``unknown`` only costs precision) cannot spend it."""
        saved = self.units
        self.units = min(saved, self.spent + int(units))
        try:
            yield self
        finally:
            self.units = saved

    @property
    def left(self) -> int:
        return self.units - self.spent

    def exhausted(self) -> bool:
        return self.left <= 0 or self.backstop_hit

    def context(self) -> z3.Context:
        if self._ctx is None:
            self._ctx = _Context()
        return self._ctx

    def solve(self, *fs):
        """``(answer, model)`` for the conjunction of ``fs`` (the model, in the shared context,
        when the answer is sat): first z3's SMT core run as a tactic, within ``FAST_UNITS`` of
        what is left, then, when that ends ``unknown``, z3's default solver with the rest. Both
        attempts charge this budget, so the answer stays a function of the query and the units,
        not of the machine."""
        ctx = self.context()
        fs = [f.translate(ctx) for f in fs]
        s = z3.Tactic("smt", ctx).solver()
        s.add(*fs)
        with self.capped(FAST_UNITS):
            r = self.check(s, export=False)
        if r == z3.unknown and not self.exhausted():
            s = z3.Solver(ctx=ctx)
            s.add(*fs)
            r = self.check(s, export=False)
        if _EXPORT is not None:
            _export(s, self.label, r, ())
        return r, self.model

    def check(self, s, *assumptions, export=True):
        """``s.check(*assumptions)`` for a ``z3.Solver`` or ``z3.Optimize``, limited to the units
        left; ``z3.unknown`` at once when none are. A solver of the shared context is copied into
        the budget's own first; on sat, ``model`` is the model."""
        self.model = None
        if _INTERRUPTED[0]:  # a Ctrl-C that a destructor swallowed (``watch_interrupts``)
            raise KeyboardInterrupt
        if self.exhausted():
            return z3.unknown
        wall_left = max(BACKSTOP * self.seconds, BACKSTOP_FLOOR_S) - (time.perf_counter() - self._t0)
        if wall_left <= 0:
            self.backstop_hit = True
            return z3.unknown
        own = isinstance(s, z3.Solver)
        if own:
            ctx = self.context()
            s = s if s.ctx is ctx else s.translate(ctx)
            assumptions = [a.translate(ctx) for a in assumptions]
        s.set("rlimit", max(1, self.left))
        s.set("timeout", max(1, int(wall_left * 1000)))
        s.set("ctrl_c", False)  # Ctrl-C is Python's (``watch_interrupts``)
        before = self._ctx_units if own else _count()
        _RUNNING[0] = s.ctx
        try:
            r = s.check(*assumptions)
        finally:
            _RUNNING[0] = None
        if _INTERRUPTED[0]:
            raise KeyboardInterrupt
        after = s.statistics().get_key_value("rlimit count") if own else _count()
        self.spent += after - before
        if own:
            self._ctx_units = after
        if export and _EXPORT is not None:
            _export(s, self.label, r, assumptions)
        if r == z3.sat:
            self.model = s.model().translate(z3.main_ctx()) if own else s.model()
        elif r == z3.unknown and "timeout" in s.reason_unknown() and self.left > 0:
            self.backstop_hit = True
        return r

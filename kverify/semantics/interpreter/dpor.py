"""Dynamic partial-order reduction: every schedule of a run that happens-before does not fix,
explored one class at a time.

Owns: what a step of a run touches (its footprint), when two steps are dependent, the scheduler
that replays a prefix of choices and then keeps a sleep set (``Dpor``), and the exploration
(``explore``): stateless DPOR with sleep sets (Flanagan and Godefroid, POPL 2005; Godefroid's
sleep sets).

A step is what one thread does between two scheduling points (``scheduler``): a warp running
until it blocks or yields, or an asynchronous operation completing. Two steps are dependent
when they step or wait on the same synchronization object (``Machine.step``, every mbarrier a
warp names, the object a resumed warp was blocked on), or access overlapping bytes through
morally strong accesses (atomics, ``.volatile``, ``.relaxed``/``.acquire``/``.release``) with
at least one write. Plain accesses are not: two plain conflicting accesses that happens-before
does not order are a data race, which the race shadow reports in the run that has them, and
ordered ones keep their order in every schedule with the same order of dependent steps.

The exploration replays the deterministic schedule, then, for every pair of dependent steps of
different threads that the run does not order by happens-before (a race of the trace), a run
that reverses it: it takes the prefix up to the earlier step and schedules the later step's
thread there (every enabled thread, when that one is not). Sleep sets drop a run whose every
enabled thread is asleep (its class was explored). When no reversal is left, every class of
schedules that differ only in the order of independent steps has been run: the runs stand for
every schedule. A budget bounds the runs; past it the exploration is incomplete and says how
many classes it ran. The interpreter runs the clusters of a launch one after another (all CTAs
at once for a cooperative launch): a race between steps of two clusters cannot be reversed,
and the runs then stand for the schedules that run clusters in that order (``crossing``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .scheduler import _ordered


class SleepBlocked(Exception):
    """Every enabled thread is asleep: the run's class was explored already."""


class Diverged(Exception):
    """A replayed prefix named a thread not enabled at its point (the run is not deterministic)."""


def thread_key(x) -> tuple:
    """The identity of a warp or an asynchronous operation, the same in every run of the launch."""
    if hasattr(x, "dpor_key"):
        return x.dpor_key()
    return ("warp", x.cta.ctaid, x.index)


@dataclass
class Footprint:
    """What one step touched: synchronization objects (by title), and byte ranges of morally
    strong accesses per memory region."""

    sync: set = field(default_factory=set)
    commuting: set = field(default_factory=set)  # objects it stepped only by commands that commute (``commutes``)
    mem: list = field(default_factory=list)  # (region, first byte, last byte, writes)

    def objects(self) -> set:
        """What it names: its synchronization objects and memory regions."""
        return self.sync | self.commuting | {("memory", r) for r, _, _, _ in self.mem}

    def dependent(self, other: "Footprint") -> bool:
        if self.sync & other.sync or self.sync & other.commuting or self.commuting & other.sync:
            return True
        for r, lo, hi, w in self.mem:
            for r2, lo2, hi2, w2 in other.mem:
                if r == r2 and (w or w2) and lo <= hi2 and lo2 <= hi:
                    return True
        return False


@dataclass
class Step:
    key: tuple  # the thread that ran
    enabled: list  # the threads that could run at this point (deterministic order)
    sleep: dict  # threads asleep at this point -> their footprints
    group: int = 0  # the CTAs running side by side (``Machine.groups_run``): clusters run one after another
    fp: Footprint | None = None
    spawned: list = field(default_factory=list)  # operations this step issued (thread keys)


class Dpor:
    """Replays ``prefix`` (thread keys, one per scheduling point), then runs deterministically
    with the sleep set ``sleep`` (threads asleep once the prefix's last step ran). Records the
    run's steps and, for ``kverify run --replay``, the deviations from the deterministic
    schedule (numbered as ``Replay`` numbers them)."""

    name = "dpor"

    def __init__(self, prefix: list, sleep: dict):
        self.prefix = prefix
        self.branch_sleep = sleep
        self.sleep = {} if not prefix else None  # active once the prefix's last step ran
        self.steps: list[Step] = []
        self.m = None  # the machine (set by ``explore``): its footprint recorder
        self.devs: dict = {}
        self.points: list = []
        self.i = 0
        self.chosen = None

    def close(self):
        """The step that ran since the last point: its footprint, and the sleep set after it."""
        m = self.m
        if not self.steps or self.steps[-1].fp is not None:
            m.fp, m.fp_spawned = Footprint(), []
            return
        s = self.steps[-1]
        s.fp, s.spawned = m.fp, [thread_key(o) for o in m.fp_spawned]
        if hasattr(self.chosen, "fp_last"):
            # a warp: what its next step reads if this one blocked it (a CTA-wide barrier instance,
            # once complete, stays complete: resuming from one reads nothing another step changes)
            self.chosen.fp_last = set(s.fp.sync)
        m.fp, m.fp_spawned = Footprint(), []
        n = len(self.steps)
        if self.sleep is None and n == len(self.prefix):
            self.sleep = dict(self.branch_sleep)
        if self.sleep is not None:
            self.sleep = {u: f for u, f in self.sleep.items() if u != s.key and not f.dependent(s.fp)}

    def choose(self, runnable, ops, current):
        self.close()
        opts = _ordered(runnable, ops, current)
        keys = [thread_key(o) for o in opts]
        n = len(self.steps)
        if n < len(self.prefix):
            try:
                j = keys.index(self.prefix[n])
            except ValueError:
                raise Diverged(f"scheduling point {n}: {self.prefix[n]} is not enabled") from None
        else:
            j = next((j for j, k in enumerate(keys) if k not in self.sleep), None)
            if j is None:
                raise SleepBlocked()
        self.steps.append(Step(keys[j], keys, dict(self.sleep) if self.sleep is not None else {},
                               self.m.groups_run))
        if len(opts) > 1:
            if j:
                self.devs[self.i] = j
            self.points.append(len(opts))
            self.i += 1
        choice = self.chosen = opts[j]
        if getattr(choice, "wait", None) is not None:
            # a blocked warp resumes: it reads the objects its blocking step touched
            self.m.fp.sync |= choice.fp_last
        return choice


@dataclass
class _Node:
    enabled: list
    chosen: tuple
    sleep: dict
    done: dict  # thread -> its footprint when run from here
    backtrack: set = field(default_factory=set)


def _races(steps: list, stack: list) -> int:
    """For every race of the trace (dependent steps of different threads that happens-before
    does not order), the backtrack point that reverses it. Returns the races between steps of
    clusters run one after another, which no run of the interpreter reverses."""
    crossing = 0
    clocks, pos = [], []
    last: dict = {}  # thread -> clock after its last step
    spawn: dict = {}  # operation -> clock of the step that issued it
    counts: dict = {}
    by_object: dict = {}  # synchronization object or memory region -> the steps naming it
    for j, s in enumerate(steps):
        if s.fp is None:  # the step a sleep-blocked run did not take
            break
        p = s.key
        c = dict(last.get(p) or spawn.get(p) or {})
        # the earlier steps that name an object this one names; ``Footprint.dependent`` decides
        cands = {i for k in s.fp.objects() for i in by_object.get(k, ())}
        cands = {i for i in cands if s.fp.dependent(steps[i].fp)}
        for i in sorted(cands, reverse=True):
            q = steps[i].key
            if q == p or c.get(q, 0) >= pos[i]:
                continue  # same thread, or ordered before this step already
            node = stack[i]
            if steps[i].group != s.group:
                crossing += 1
            elif p in node.enabled:
                node.backtrack.add(p)
            else:
                node.backtrack.update(node.enabled)
            for t, v in clocks[i].items():
                if c.get(t, 0) < v:
                    c[t] = v
        counts[p] = counts.get(p, 0) + 1
        c[p] = counts[p]
        clocks.append(c)
        pos.append(counts[p])
        last[p] = c
        for k in s.spawned:
            spawn[k] = c
        for k in s.fp.objects():
            by_object.setdefault(k, []).append(j)
    return crossing


@dataclass
class Exploration:
    runs: list  # (machine, Dpor) per run, in order
    classes: int  # runs that were not sleep-blocked
    complete: bool  # no reversal left: every class was run
    crossing: bool  # a race between clusters run one after another: classes that interleave clusters are not run
    stopped: bool = False  # ended by ``stop`` (a run that violates), not by the budget


def explore(run_one, budget: int, stop=None) -> Exploration:
    """``run_one(scheduler)`` runs the launch under ``scheduler`` and returns ``(machine,
    sleep-blocked)``. At most ``budget`` runs; none after a run for which ``stop(machine)``
    holds (the exploration is then incomplete)."""
    stack: list[_Node] = []
    prefix, sleep = [], {}
    runs, classes, crossing = [], 0, False
    while len(runs) < budget:
        sched = Dpor(prefix, sleep)
        m, blocked = run_one(sched)
        sched.close()
        runs.append((m, sched))
        classes += not blocked
        steps = sched.steps
        if prefix:
            stack[len(prefix) - 1].done[prefix[-1]] = steps[len(prefix) - 1].fp
        for s in steps[len(prefix):]:
            if s.fp is None:
                break
            stack.append(_Node(s.enabled, s.key, s.sleep, {s.key: s.fp}))
        crossing |= _races(steps[:len(stack)], stack) > 0
        if stop is not None and stop(m):
            return Exploration(runs, classes, False, crossing, True)
        for i in range(len(stack) - 1, -1, -1):
            node = stack[i]
            todo = [k for k in node.enabled if k in node.backtrack and k not in node.done and k not in node.sleep]
            if todo:
                break
        else:
            return Exploration(runs, classes, True, crossing)
        t = todo[0]
        prefix = [stack[x].chosen for x in range(i)] + [t]
        sleep = {**node.sleep, **{u: f for u, f in node.done.items() if f is not None}}
        node.done[t] = None
        node.chosen = t
        del stack[i + 1:]
    return Exploration(runs, classes, False, crossing)

"""Schedulers: who runs next at each scheduling point of the interpreter.

A scheduling point is a synchronization instruction of a warp (barrier, mbarrier operation,
fence, async issue, group wait), an atomic whose returned value is used, a warp-collective
exchange, a spinning or long-running loop's back-edge (``Machine._spin``/``_fair``) or the
completion of an asynchronous operation; memory accesses between two points commute under
the happens-before race check, so only these points are interleaved (the partial-order
reduction the interpreter relies on).

* ``Deterministic``: the current warp runs until it blocks, then the next runnable warp in
  index order; asynchronous operations complete as late as possible (only when no warp can
  run), which exposes reads that do not wait for them.
* ``Random(seed)``: a uniformly random choice among runnable warps and completable
  operations at every point; replayable from the seed.
* ``Replay(deviations)``: the deterministic schedule except at the given points, where the
  given alternative is taken: how ``kverify run --replay`` reproduces a schedule that the
  exhaustive exploration (``dpor``) ran.
"""
from __future__ import annotations

import random


def _ordered(runnable, ops, current):
    """Options, the deterministic choice first."""
    if runnable:
        if current in runnable:
            first = current
        else:
            after = [w for w in runnable if current is None or warp_key(w) > warp_key(current)]
            first = after[0] if after else runnable[0]
        rest = [w for w in runnable if w is not first]
        return [first] + rest + list(ops)
    return list(ops)


def warp_key(w):
    """A warp's place in the deterministic order: its CTA's rank in the cluster, then its index."""
    return (w.cta.rank, w.index)


class Deterministic:
    name = "deterministic"

    def __init__(self):
        self.points = []

    def choose(self, runnable, ops, current):
        opts = _ordered(runnable, ops, current)
        if len(opts) > 1:
            self.points.append(len(opts))
        return opts[0]


class Random:
    name = "random"

    def __init__(self, seed=0):
        self.rng = random.Random(seed)
        self.seed = seed

    def choose(self, runnable, ops, current):
        opts = _ordered(runnable, ops, current)
        return opts[self.rng.randrange(len(opts))]


class Replay:
    """Deterministic except at ``deviations`` ({point index: alternative index})."""

    name = "replay"

    def __init__(self, deviations: dict):
        self.deviations = dict(deviations)
        self.i = 0
        self.points = []

    def choose(self, runnable, ops, current):
        opts = _ordered(runnable, ops, current)
        if len(opts) <= 1:
            return opts[0]
        alt = self.deviations.get(self.i, 0)
        self.points.append(len(opts))
        self.i += 1
        return opts[alt] if alt < len(opts) else opts[0]


def parse_replay(text: str) -> dict:
    """``"12:1,40:2"`` -> {12: 1, 40: 2}."""
    out = {}
    for part in filter(None, (text or "").split(",")):
        i, _, a = part.partition(":")
        out[int(i)] = int(a or 1)
    return out


def format_replay(dev: dict) -> str:
    return ",".join(f"{i}:{a}" for i, a in sorted(dev.items()))

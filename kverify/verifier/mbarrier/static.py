"""Static mbarrier conformance by SMT, for all loop iterations and trip counts.

Owns the obligations "mbarrier conformance: parity (initial phase and alternation)",
"... tx bytes (per phase)" and "... arrivals (per phase)" (checker ``mbarrier``). One symbolic
thread runs the kernel body (:mod:`kverify.verifier.mbarrier.sites`, built on
:mod:`kverify.symbolic`) with loop iteration counters ``k``; every mbarrier instruction and
every copy signalling an mbarrier is a site with its barrier address ``a(k)`` and its terms.
Then, with z3:

* parity (rule ``mbarrier.parity``, §9.7.13.15.4 phase, §9.7.13.15.16 test_wait/try_wait):
  the n-th use of a barrier by a wait site names phase ``n - offset``, the offset given by
  the waiting role (0: its round completes the phase -- copies / expect-tx on it, or the
  waiting threads arrive on it first, or another role's arrivals that do not wait for this
  role; 1: the producer's pass-through on a fresh barrier, its releasers first waiting for
  the phase 0 its signal on a partner barrier completes; from the ring, ``Facts.role``).
  Straight-line waits count the earlier ones; in a loop, with the reuse distance
  ``d`` (smallest ``d`` in 1..64 with ``a(k+d) == a(k)`` and ``a(k+d') != a(k)`` for
  ``d' < d``), iterations ``0 .. d-1`` name parity ``offset`` and ``p(k+d) != p(k)``; in two
  nested loops (a persistent tile loop around a k loop, the ring state carried across both),
  the n-th execution of the wait is use ``n div d`` of barrier ``A[n mod d]``, its ring
  registers proved to be periodic tables of ``n`` (:mod:`.ring`);
* tx bytes (rule ``mbarrier.tx-mismatch``, §9.7.13.15.11 expect-tx / complete-tx,
  §9.7.9.25.4.1, §9.7.9.27): per phase of a barrier (one iteration, no wait on it between
  the sites) the bytes the copies deliver -- size times the issuing threads -- equal the
  announced bytes times the announcing threads;
* arrivals (rule ``mbarrier.arrival-overflow``, §9.7.13.15.13 arrive-on, §9.7.13.15.9 init):
  per phase the arrive sites bring (one per warp under ``elect.sync``, one under a
  lane/thread guard, whole warps otherwise; counted over the launch's block, alike in every
  iteration) as many arrivals as the init count of their barrier, and every barrier waited
  on can be arrived on.

Verdicts follow DESIGN.md decision 6: proved only for what was checked, violated with a
counterexample (iterations, barrier address, source line), unknown with the reason.
docs/mbarrier.md describes the encoding and what is not modelled. Each obligation is one
module (parity.py, tx.py, arrivals.py) over the facts of one symbolic run (facts.py, sites.py;
ring.py: ring invariants of nested loops for parity).
"""
from __future__ import annotations

import time

import z3

from kverify.symbolic import MBARRIER, Unsupported, sync_of

from . import arrivals, parity, tx
from .facts import TITLES, Facts, ob as _ob

OBLIGATIONS = (("parity", parity.check), ("tx bytes", tx.check), ("arrivals", arrivals.check))


def check_mbarrier(module, kernel=None, launch=None, timeout_s: float = 10.0) -> list:
    """Static mbarrier obligations of ``kernel`` (see the module docstring); ``[]`` when the
    kernel uses no mbarrier. ``timeout_s`` bounds the solver time of the symbolic execution
    and of each obligation."""
    t0 = time.perf_counter()
    if kernel is None or isinstance(kernel, str):
        kernel = module.kernel(kernel)
    if not uses_mbarrier(module, kernel):
        return []
    try:
        return run_obligations(Facts(module, kernel, launch, timeout_s, t0).prepare())
    except Unsupported as e:
        why = str(e)
    except z3.Z3Exception as e:
        why = f"solver error: {e}"
    except Exception as e:  # noqa: BLE001 - fail closed
        why = f"internal error in the static mbarrier checker ({type(e).__name__}: {e})"
    return [_ob(w, "unknown", why, t0) for w in TITLES]


def uses_mbarrier(module, kernel) -> bool:
    """The kernel (or a function it calls) operates on an mbarrier or completes bytes on one."""
    from kverify.semantics.ir.visit import reachable_instructions

    return any(sync_of(i) in MBARRIER or "mbarrier::complete_tx::bytes" in i.mods
               for i in reachable_instructions(module, kernel))


def scope(chk: Facts) -> str:
    """What a static proof over ``chk``'s run covers: every iteration and trip count, the scalar
    parameters (every value, or the launch's), the launch's tensor maps when a copy's size came
    from one, the block and grid it assumed."""
    env = chk.env
    given = ", ".join(f"{k}={v}" for k, v in env.param_values.items())
    claim = (f"every loop iteration, the launch's scalar arguments ({given})" if given else
             "every loop iteration and trip count, every value of the scalar parameters")
    maps = ["the launch's tensor maps (their boxes size the copies)"] if chk.ex.maps_used else []
    return "; ".join([claim, *maps, *env.scope])


def run_obligations(chk: Facts) -> list:
    """The three obligations over the facts of one symbolic run (each with its own solver
    budget); :mod:`kverify.verifier.races.pipeline` runs them on its own run as its premises."""
    out, covers = [], scope(chk)
    for what, fn in OBLIGATIONS:
        t = time.perf_counter()
        chk.budget.restart()  # each obligation has its own solver budget
        chk.assumptions = set()
        o = fn(chk)
        if o.status == "proved" and chk.assumptions:
            o.message += "; assuming " + "; ".join(sorted(chk.assumptions))
        if o.status == "proved" and o.bound is None:
            o.bound = covers
        o.time_s = time.perf_counter() - t
        out.append(o)
    out[0].time_s += (time.perf_counter() - chk.t0) - sum(o.time_s for o in out)
    return out

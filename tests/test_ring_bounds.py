"""Bounds of ring indices in the symbolic loop summary (``LoopSummaries._bounds``): a loop register
that enters below a value the body compares it with, and that every iteration keeps below it, is
known to stay below it. tests/data/ring_bounds/two_rings.cu keeps two mbarrier rings in one loop,
the second advanced only on loaded data (no closed form): with the bounds, no wait on ``full`` can
name an ``empty`` barrier."""
import re
import time

import pytest

from conftest import ROOT
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.symbolic import loops
from kverify.verifier.mbarrier.facts import Facts

PTX = ROOT / "tests" / "data" / "ring_bounds" / "two_rings.ptx"


def _facts(kernel="two_rings"):
    m = load_module(str(PTX))
    k = m.kernel(kernel)
    return Facts(m, k, LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [32, 1, 1]}),
                 10.0, time.perf_counter()).prepare()


def _waits(chk):
    src = (ROOT / "tests" / "data" / "ring_bounds" / "two_rings.cu").read_text().splitlines()
    out = {"full": [], "empty": []}
    for w in chk.sites:
        if w.kind == "wait" and w.loops:
            line = src[w.instr.loc.line - 1] if w.instr.loc.line else ""
            out["full" if "full" in line else "empty"].append(w)
    return out


def test_the_ring_indices_are_bounded_by_their_wrap_and_the_rings_do_not_alias():
    chk = _facts()
    bounds = [str(c) for c, _ in chk.env.constraints_a if re.fullmatch(r"ULT\(h\d+\.%r\d+!A, [34]\)", str(c))]
    assert len(bounds) >= 2, bounds  # the read index and the write index
    waits = _waits(chk)
    assert waits["full"] and waits["empty"]
    for f in waits["full"]:
        for e in waits["empty"]:
            assert chk.alias(f, e) == "unsat"


def test_without_the_bounds_the_rings_may_alias(monkeypatch):
    monkeypatch.setattr(loops.LoopSummaries, "_bounds", lambda self, *a: None)
    chk = _facts()
    waits = _waits(chk)
    assert any(chk.alias(f, e) != "unsat" for f in waits["full"] for e in waits["empty"])


def test_an_index_that_escapes_its_ring_gets_no_bound_and_may_alias():
    """``escaping``: the read index steps by 2 and is reset only at 3 (0, 2, 4, ...): a bound of
    3 is not inductive, so none is claimed, and its waits may name the other ring's barriers."""
    chk = _facts("escaping")
    waits = _waits(chk)
    assert waits["full"] and waits["empty"]
    assert any(chk.alias(f, e) != "unsat" for f in waits["full"] for e in waits["empty"])


def test_a_role_guessed_from_an_unbounded_ring_makes_no_violation():
    """``guessed``: the pass-through wait on empty[0] (parity 1) of a thread that also posts
    expect-tx on full[s], with s modulo a runtime stage count: full[s] meets empty[0] only for ring
    positions the encoding over-approximates. The role "consumer of the fill" is then a guess, and
    the parity that contradicts it is unknown, not violated (CUTLASS's non-warp-specialized TMA
    mainloop met this once its warp index became exact)."""
    from kverify.semantics.ir.load import load_module
    from kverify.verifier.mbarrier import check_mbarrier

    m = load_module("tests/data/ring_bounds/two_rings.ptx")
    parity = check_mbarrier(m, m.kernel("guessed"), None, 10.0)[0]
    assert parity.status == "unknown", parity.message
    assert parity.message.startswith("two_rings.cu:69:3 (ptx 289): the parity may differ from the phase it must "
                                     "name, but the waiting role (consumer of the fill")
    assert "rests on barrier addresses the encoding over-approximates" in parity.message


def test_induction_checks_the_solver_cannot_decide_together_are_decided_one_by_one():
    """A disjunction of induction checks can be far harder for z3 than each part (the CuTe TN
    tutorial's k loop: 7.5 solver seconds, unknown; each part under 0.15 s, unsat). With a budget
    cap for the joint query, an unknown there is retried per check, and only the checks not
    proved fail; without one (a caller with no shared budget) every check fails, as before."""
    from contextlib import nullcontext

    import z3

    from kverify.symbolic.loops import LoopSummaries

    a, b = z3.BitVecs("a b", 32)
    ok1, ok2, bad = ("iv", "%r1", a != a), ("iv", "%r2", b != b), ("trip", None, a == b)
    asked = []

    class Probe(LoopSummaries):
        def check(self, f):
            asked.append(f)
            if z3.is_or(f):
                return "unknown", None  # the joint query: no answer
            s = z3.Solver()
            s.add(f)
            return ("unsat", None) if s.check() == z3.unsat else ("sat", s.model())

    p = Probe()
    p.query_cap = nullcontext
    assert p._failed_checks([ok1, ok2]) == []
    assert p._failed_checks([ok1, bad, ok2]) == [bad]
    assert len(asked) == (1 + 2) + (1 + 3)  # the joint query, then one per check
    p.query_cap = None
    assert p._failed_checks([ok1, ok2]) == [ok1, ok2]


def test_every_bound_query_runs_under_the_budget_cap_and_an_unanswered_candidate_is_dropped(monkeypatch):
    """One candidate-bound query of CUTLASS's stream-K GEMM took the whole 10 s budget of the
    symbolic run (z3: unknown), leaving none for the rest (both runs of the kernel, 22 s of 35 s).
    A bound only adds precision, so each bound query -- the joint one and, when that has no answer,
    each retried alone -- runs under the executor's cap (``query_cap``), and a candidate without an
    answer is dropped: here every bound query answers ``unknown``, so no bound is claimed, and the
    run still completes."""
    from contextlib import contextmanager

    depth, uncapped, in_bounds = [0], [], [False]

    @contextmanager
    def cap(self):
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1

    solve = Facts.solve
    orig = loops.LoopSummaries._bounds

    def bounds(self, *a):
        in_bounds[0] = True
        try:
            return orig(self, *a)
        finally:
            in_bounds[0] = False

    def fake_solve(self, fs):
        if in_bounds[0]:
            if depth[0] == 0:
                uncapped.append(fs)
            return "unknown", None
        return solve(self, fs)

    monkeypatch.setattr(Facts, "query_cap", cap)
    monkeypatch.setattr(Facts, "solve", fake_solve)
    monkeypatch.setattr(loops.LoopSummaries, "_bounds", bounds)
    chk = _facts()
    assert uncapped == []
    assert not [c for c, _ in chk.env.constraints_a if re.fullmatch(r"ULT\(h\d+\.%r\d+!A, [34]\)", str(c))]
    assert chk.sites

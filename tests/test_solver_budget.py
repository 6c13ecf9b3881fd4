"""Solver limits are z3 resource units, not seconds: the same query spends the same units every
time -- each budget's queries run in a z3 context of its own, so neither the machine's load nor
what the process solved before moves the count -- and the SMT checks give the same verdicts
while other processes keep the CPU busy."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.symbolic import budget as budget_mod
from kverify.symbolic.budget import RLIMIT_PER_SECOND, SolverBudget
from kverify.verifier.mbarrier.static import check_mbarrier
from kverify.verifier.races.smt import check_races

ZOO = Path(__file__).resolve().parent / "zoo"


def _query():
    x, y, z = z3.BitVecs("x y z", 32)
    s = z3.Solver()
    s.add(x * y * z == 0x12345679, z3.UGT(x, 1), z3.UGT(y, 1), z3.UGT(z, 1), x * x + y == z * 3)
    return s


def _prime_factors():
    x, y = z3.BitVecs("x y", 16)
    # 65521 is prime: unsat, about 0.5 million units (z3 checks its count every few thousand
    # units: a query that must run out of a small budget is far larger than that budget)
    return [z3.ZeroExt(16, x) * z3.ZeroExt(16, y) == 65521, z3.UGT(x, 1), z3.UGT(y, 1)]


def test_a_query_spends_the_same_units_every_time_and_a_small_budget_stops_it():
    spent = []
    for _ in range(3):
        b = SolverBudget(10)
        s = z3.Solver()
        s.add(*_prime_factors())
        assert b.check(s) == z3.unsat
        spent.append(b.spent)
    assert 100_000 < min(spent) and max(spent) == min(spent) < 10 * RLIMIT_PER_SECOND
    tiny = SolverBudget(spent[0] / 4 / RLIMIT_PER_SECOND)
    assert tiny.check(s) == z3.unknown and tiny.exhausted() and not tiny.backstop_hit
    assert tiny.check(s) == z3.unknown  # nothing left


def _verdicts():
    out = {}
    for fam, file in (("reduce_smem", "reduce_smem.ptx"), ("reduce_smem", "reduce_smem__missing_sync.ptx"),
                      ("bulk_pipeline", "bulk_pipeline.ptx"), ("bulk_pipeline", "bulk_pipeline__wrong_parity.ptx")):
        mf = json.loads((ZOO / fam / "manifest.json").read_text())
        v = next(v for v in mf["variants"] if v["file"].replace(".cu", ".ptx") == file)
        m = load_module(str(ZOO / fam / file))
        spec = LaunchSpec.from_dict(v["launch"])
        obs = check_races(m, v["kernel"], spec) + check_mbarrier(m, v["kernel"], spec)
        out[file] = [(o.id, o.status, o.rule) for o in obs]
    return out


@pytest.mark.slow
def test_verdicts_do_not_change_under_cpu_load():
    quiet = _verdicts()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = _verdicts()
    finally:
        for p in burners:
            p.kill()
    assert loaded == quiet
    assert quiet["reduce_smem__missing_sync.ptx"][0][1] == "violated"


def test_restart_restores_a_capped_budget():
    """An obligation may cap what is left of its budget (the parity check does once it can no
    longer be proved); the next obligation's restart gets the whole budget again."""
    b = SolverBudget(2.0)
    full = b.units
    b.units = b.spent + 10
    s = z3.Solver()
    x = z3.BitVec("x", 32)
    s.add(x * x == 12345677)
    b.check(s)
    assert b.exhausted()
    b.restart()
    assert b.units == full and b.spent == 0 and not b.exhausted()


def test_reading_the_count_costs_no_units():
    """``_count`` reads the shared context's count off one probe solver's statistics: reading it
    spends nothing."""
    from kverify.symbolic.budget import _count

    a = _count()
    assert _count() == a == _count()  # a read is no query


def test_a_query_runs_in_the_budgets_own_context_and_is_charged_what_it_spent_there():
    """A budget copies its queries into a z3 context of its own: the shared context does (almost)
    none of the work, the charge is what the budget's context counted, and a model comes back in
    the shared context."""
    from kverify.symbolic.budget import _count

    a = _count()
    b = SolverBudget(10)
    assert b.check(_query()) == z3.unsat
    assert _count() - a < 1000 < b.spent and b.model is None
    x = z3.BitVec("x", 32)
    r, m = b.solve(x * 3 == 21, z3.ULT(x, 100))
    assert r == z3.sat and m.eval(x).as_long() == 7 and m.eval(x).ctx == z3.main_ctx()
    s = z3.Solver()
    s.add(x + 1 == 5)
    assert b.check(s) == z3.sat and b.model.eval(x).as_long() == 4
    assert b.check(s, x == 3) == z3.unsat and b.model is None  # assumptions are copied too


def test_what_the_shared_context_holds_does_not_move_a_budgets_count():
    """The units a query spends are the same before and after the process made and solved other
    terms in the shared context (they moved by 10x on the same may-alias query before queries
    had a context of their own: a verdict near a cap then hung on what ran earlier)."""
    def spend():
        b = SolverBudget(10)
        assert b.check(_query()) == z3.unsat
        r, _ = b.solve(*_query().assertions())
        assert r == z3.unsat
        return b.spent

    first = spend()
    junk = [z3.BitVec(f"junk{i}", 64) for i in range(500)]
    s = z3.Solver()
    s.add(z3.Or(*[j * j == 7 + i for i, j in enumerate(junk[:50])]))
    s.set("rlimit", 100_000)
    s.check()
    assert spend() == first


def test_z3_release_turns_off_the_python_asserts_and_the_c_api_still_rejects_a_bad_argument():
    """The command and this suite run as ``kverify.z3_release()`` leaves z3 (tests/conftest.py)."""
    import kverify

    kverify.z3_release()
    assert z3.z3.Z3_DEBUG is False
    with pytest.raises(z3.Z3Exception):  # from the C API: a sort mismatch is never substituted
        z3.substitute(z3.BitVec("a", 8), (z3.BitVec("a", 8), z3.BitVec("b", 16)))


def test_no_query_sets_a_wall_clock_timeout_of_its_own():
    """Every solver limit goes through ``SolverBudget`` (z3 resource units, one backstop): a
    z3 ``timeout`` set anywhere else makes the answer depend on the machine's load."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "kverify"
    bad = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name != "budget.py"
           for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"""\.set\(\s*["']timeout["']""", line)]
    assert bad == []


def _squares():
    x = z3.BitVec("x", 16)
    return [x * x == 0x1235]  # no odd square is 5 mod 8: unsat, ~1.5k units in the SMT core, ~14k in the default solver


def test_solve_answers_a_small_query_in_the_smt_core_alone():
    b = SolverBudget(10)
    r, s = b.solve(*_squares())
    assert r == z3.unsat and 0 < b.spent < budget_mod.FAST_UNITS
    x = z3.BitVec("x", 16)
    r, m = SolverBudget(10).solve(x * 3 == 21, z3.ULT(x, 100))
    assert r == z3.sat and m.eval(x).as_long() == 7


def test_solve_goes_on_with_the_default_solver_when_the_first_attempt_runs_out(monkeypatch, tmp_path):
    """The first attempt's units are capped; the query it cannot finish goes to z3's default
    solver with what is left, both attempts are charged, and an export holds the query once, with
    the final answer."""
    monkeypatch.setattr(budget_mod, "FAST_UNITS", 50)
    b = SolverBudget(10)
    with budget_mod.export_smt(str(tmp_path), "k"):
        r, s = b.solve(*_squares())
    assert r == z3.unsat and b.spent > 1000
    assert [p.name for p in tmp_path.iterdir()] == ["k.query.0001.unsat.smt2"]
    # the first attempt's 50 units and 10 more, for a query of about half a million
    small = SolverBudget(60 / RLIMIT_PER_SECOND)
    assert small.solve(*_prime_factors())[0] == z3.unknown and small.exhausted()
    assert small.solve(*_prime_factors())[0] == z3.unknown  # nothing left: no attempt at all


@pytest.mark.parametrize("units", [0, 50], ids=["skipped", "runs-out"])
def test_verdicts_are_the_same_without_the_first_attempt(monkeypatch, units):
    """The SMT core's first attempt changes how fast a query is answered, not the answer: the
    race and mbarrier obligations of a correct kernel and its seeded twin come out the same with
    every query sent to the default solver at once, or after a first attempt that runs out (a
    fallback that took the attempt's ``unknown`` for an answer would call the seeded race and
    the wrong parity clean)."""
    fast = _verdicts()
    monkeypatch.setattr(budget_mod, "FAST_UNITS", units)
    assert _verdicts() == fast
    assert ("race.shared", "violated", "race.shared") in fast["reduce_smem__missing_sync.ptx"]
    assert ("mbarrier.parity", "violated", "mbarrier.parity") in fast["bulk_pipeline__wrong_parity.ptx"]
    assert [s for _, s, _ in fast["bulk_pipeline__wrong_parity.ptx"]].count("violated") >= 1


def test_a_query_the_static_obligations_ask_again_is_not_solved_again(monkeypatch):
    """The mbarrier facts keep each definite answer: the same query comes from several
    obligations' rules (peek_pipeline asked 5 of its queries twice)."""
    asked = []
    solve = SolverBudget.solve

    def counting(self, *fs):
        asked.append(tuple(f.get_id() for f in fs))
        return solve(self, *fs)

    monkeypatch.setattr(SolverBudget, "solve", counting)
    m = load_module(ZOO / "peek_pipeline" / "peek_pipeline.ptx")
    obs = check_mbarrier(m)
    assert [o.status for o in obs] == ["proved", "proved", "proved"]
    assert len(asked) >= 30 and len(set(asked)) == len(asked)


def test_bound_candidates_checked_one_by_one_share_one_part_of_the_budget():
    """A Houdini round whose joint query has no answer checks its candidates one by one; a
    failed check costs only a bound (precision), so those queries together get one part of the
    budget (``query_cap``), not one part each."""
    from kverify.symbolic.loops import LoopSummaries

    class Loops(LoopSummaries):
        def __init__(self):
            self.budget = SolverBudget(1.0)

        def query_cap(self):
            return self.budget.capped(self.budget.left // 32)

        def check(self, f):
            return ("unknown" if self.budget.solve(f)[0] == z3.unknown else "?"), None

    x, y = z3.BitVecs("x y", 16)
    hard = [z3.And(z3.ZeroExt(16, x) * z3.ZeroExt(16, y) == p, z3.UGT(x, 1), z3.UGT(y, 1))
            for p in (65521, 65519, 65497, 65479, 65449)]  # primes: each about 0.5 M units to refute
    loops = Loops()
    cap = loops.budget.units // 32
    checks = [("bound", f"%r{i}", f) for i, f in enumerate(hard)]
    assert loops._failed_checks(checks, capped=True) == checks
    # the joint query's part and one more for the five (each part spent to within z3's count step)
    assert loops.budget.spent < 2.2 * cap


def test_a_kept_answer_is_not_given_to_the_same_formula_under_a_new_constraint():
    """The facts' answers are kept by the whole query, the constraints it rests on included: a
    bound added after a query (a loop's Houdini bound) makes the same formula a new query."""
    from types import SimpleNamespace

    from kverify.symbolic.terms import keys
    from kverify.verifier.mbarrier.facts import Facts

    chk = Facts(None, None, None, 10.0, 0.0)
    chk.env = SimpleNamespace(shared_constraints=[], constraints_a=[])
    x = z3.BitVec("kept.x", 32)
    assert chk.solve([x == 5])[0] == "sat"
    spent = chk.budget.spent
    assert chk.solve([x == 5])[0] == "sat" and chk.budget.spent == spent  # kept: not solved again
    chk.env.constraints_a.append((z3.ULT(x, 5), keys(x)))
    assert chk.solve([x == 5])[0] == "unsat"
    y = z3.BitVec("kept.y", 32)  # an unknown is not kept: the next budget may answer it
    chk.budget.units = chk.budget.spent
    assert chk.solve([y * y == 7])[0] == "unknown"
    chk.budget.restart()
    assert chk.solve([y * y == 7])[0] == "unsat"

"""``check`` as registered checkers: each declares its obligations, one combinator applies
the verdict lattice, a crashing checker gives ``unknown`` obligations (never missing ones),
and an obligation with nothing to check is ``vacuous``, not ``proved``."""
import json
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier import check as C
from kverify.verifier.report import OBLIGATIONS, Obligation, kernel_verdict, obligation_id

ZOO = Path(__file__).resolve().parent / "zoo"


def _variant(family, file):
    mf = ZOO / family / "manifest.json"
    v = next(v for v in json.loads(mf.read_text())["variants"] if v["file"] == file)
    path = mf.parent / v["file"].replace(".cu", ".ptx")
    m = load_module(str(path))
    return m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), str(path)


def test_registered_checkers_in_order():
    assert [c.name for c in C.CHECKERS] == ["races", "assertions", "calls", "pipeline", "mbarrier", "interpreter",
                                            "uniform"]


def test_a_crashing_checker_yields_unknown_obligations_with_the_reason(monkeypatch):
    def boom(ctx):
        raise RuntimeError("injected crash")

    crashing = [C.Checker(c.name, c.titles, boom if c.name == "mbarrier" else c.run, c.applies, c.replayable,
                          c.claims) for c in C.CHECKERS]
    m, k, spec, path = _variant("bulk_pipeline", "bulk_pipeline.cu")
    rep = C.check_kernel(m, k, spec, path=path, checkers=crashing)
    by = {o.id: o for o in rep.obligations}
    # the three symbolic obligations are still there; the clean run bounds them and says why
    # they are not proved
    for oid in ("mbarrier.parity", "mbarrier.tx-bytes", "mbarrier.arrivals"):
        assert by[oid].status == "bounded"
        assert "internal error in checker mbarrier (RuntimeError: injected crash)" in by[oid].message
    # with the interpreter crashing too, every obligation it declared is unknown
    crashing = [C.Checker(c.name, c.titles, boom, c.applies, c.replayable, c.claims) for c in C.CHECKERS]
    rep = C.check_kernel(m, k, spec, path=path, checkers=crashing)
    assert rep.verdict == "inconclusive"
    ids = [o.id for o in rep.obligations]
    assert ids == ["race.shared", "race.global", "race.async", "mbarrier.protocol", "barrier.named", "deadlock",
                   "memory", "mbarrier.parity", "mbarrier.tx-bytes", "mbarrier.arrivals"]
    assert all(o.status == "unknown" and "injected crash" in o.message for o in rep.obligations)


def test_vacuous_obligations_say_so_and_do_not_block_verified():
    m, k, spec, path = _variant("vadd", "vadd.cu")
    rep = C.check_kernel(m, k, spec, path=path)
    by = {o.id: o for o in rep.obligations}
    assert by["race.async"].status == "vacuous" and by["mbarrier.protocol"].status == "vacuous"
    assert by["race.async"].message == "the kernel has no such operations"
    assert rep.verdict == "verified"


def test_combine_lattice():
    races = C.Checker("races", lambda c: (), None, claims="for all threads of the launch")
    interp = C.Checker("interpreter", lambda c: (), None, replayable=True)
    t = "race-free: shared"
    ob = lambda st, msg="", cex=None: Obligation(t, "races", st, msg, None, [], cex, 0.0)  # noqa: E731
    # a violation wins, the replayable one first, the other's counterexample attached
    got = C.combine(t, [(races, ob("violated", "smt", {"a": 1})), (interp, ob("violated", "run", {"replay": "r"}))],
                    False)
    assert got.message == "run" and got.counterexample == {"replay": "r", "smt": {"a": 1}}
    # a proof beats a bound; a bound over an unknown says what was not proved
    assert C.combine(t, [(races, ob("proved")), (interp, ob("bounded"))], False).status == "proved"
    got = C.combine(t, [(races, ob("unknown", "loop not summarized")), (interp, ob("bounded", "clean run"))], False)
    assert got.status == "bounded"
    assert got.message == "clean run; not proved for all threads of the launch: loop not summarized"
    # vacuous beats bounded and unknown, never a violation
    assert C.combine(t, [(interp, ob("bounded"))], True).status == "vacuous"
    assert C.combine(t, [(interp, ob("violated"))], True).status == "violated"
    # no evidence at all is unknown
    assert C.combine(t, [], False).status == "unknown"


def test_obligation_ids_are_dotted_and_registered():
    assert obligation_id("race-free: shared") == "race.shared"
    assert obligation_id("mbarrier conformance: full[0..2]") == "mbarrier.protocol[full[0..2]]"
    assert obligation_id("mbarrier conformance: parity (initial phase and alternation)") == "mbarrier.parity"
    assert all("." in i or i in ("deadlock", "memory", "equivalence") for i in OBLIGATIONS.values())
    with pytest.raises(KeyError):
        obligation_id("something nobody registered")
    assert kernel_verdict([Obligation(t, "x", "vacuous") for t in ("race-free: async",)]) == "verified"


def test_every_registered_checker_runs_on_the_context(capfd):
    """Each checker is the function its decorator names (a helper placed between the pipeline
    checker's decorator and its function took its place: 'race-free: async' was an internal
    error without a launch and silently the run's with one)."""
    from kverify.verifier.cli import main

    assert [c.run.__name__ for c in C.CHECKERS] == ["_races", "_assertions", "_calls", "_pipeline_races",
                                                     "_mbarrier_static", "_interpreter", "_without_values"]
    rc = main(["check", str(ZOO / "bulk_pipeline" / "bulk_pipeline.ptx"), "--format", "json"])
    (k,) = json.loads(capfd.readouterr().out)["kernels"]
    ob = {o["title"]: o for o in k["obligations"]}["race-free: async"]
    assert (rc, ob["status"]) == (0, "proved") and ob["bound"].startswith("every loop iteration, every schedule"), ob

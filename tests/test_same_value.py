"""Racing writes that always store the same value (``race.shared.same-value``,
``race.global.same-value``): a warning, not an error; the same race storing different values
stays ``race.shared``/``race.global``. Kernels: tests/data/same_value (a compare-equal flag
cleared by every mismatching thread, and a twin that stores the thread index)."""
from pathlib import Path

from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "same_value"
LAUNCH = ["--grid", "4", "--block", "128", "--arg", "n=500"]


def _check(capsys, name, *extra):
    rc = main(["check", str(DATA / f"{name}.ptx"), *LAUNCH, *extra])
    return rc, capsys.readouterr().out


def test_same_value_races_are_warnings(capsys):
    rc, out = _check(capsys, "compare_equal")
    assert rc == 0, out
    assert "kernel compare_equal: VERIFIED" in out
    assert ("tests/data/same_value/compare_equal.cu:10:5: warning[race.shared.same-value]: same-value "
            "write-after-write, not ordered: write of shared s_equal by thread 0") in out
    assert ("tests/data/same_value/compare_equal.cu:9:5: warning[race.global.same-value]: same-value "
            "write-after-write, not ordered: write of global equal by thread 0") in out
    assert "  warning   race-free: shared" in out and "  warning   race-free: global" in out


def test_strict_makes_same_value_races_errors(capsys):
    rc, out = _check(capsys, "compare_equal", "--strict")
    assert rc == 1, out
    assert "error[race.global.same-value]" in out and "kernel compare_equal: VIOLATED" in out


def test_racing_writes_of_different_values_stay_errors(capsys):
    rc, out = _check(capsys, "compare_equal__index")
    assert rc == 1, out
    assert "kernel compare_equal: VIOLATED" in out
    assert ("tests/data/same_value/compare_equal__index.cu:8:5: error[race.global]: write-after-write, not ordered: "
            "write of global equal by thread 0") in out
    assert "warning[race.shared.same-value]" in out  # the shared flag of the twin is still same-value


def test_smt_proves_the_values_equal_or_not():
    # the symbolic checker: a possible race whose two stores always write the same value says so
    from kverify.launch import LaunchSpec
    from kverify.semantics.ir.load import load_module
    from kverify.verifier.races.smt import check_races

    spec = LaunchSpec.from_dict({"kernel": "compare_equal", "grid": [4, 1, 1], "block": [128, 1, 1],
                                 "args": {"n": 500}})
    m = load_module(str(DATA / "compare_equal.ptx"))
    ob = {o.title: o for o in check_races(m, m.kernels[0], spec)}
    assert ob["race-free: global"].status == "unknown"
    assert "may race (for values the encoding over-approximates), and would always store the same value" in \
        ob["race-free: global"].message
    m = load_module(str(DATA / "compare_equal__index.ptx"))
    ob = {o.title: o for o in check_races(m, m.kernels[0], spec)}
    assert "would always store the same value" not in ob["race-free: global"].message


def test_smt_confirms_a_same_value_race_as_a_warning(capsys):
    from kverify.launch import LaunchSpec
    from kverify.semantics.ir.load import load_module
    from kverify.verifier.races.smt import check_races

    spec = LaunchSpec.from_dict({"kernel": "mark_seen", "grid": [4, 1, 1], "block": [128, 1, 1], "args": {"n": 500}})
    m = load_module(str(DATA / "mark_seen.ptx"))
    ob = {o.title: o for o in check_races(m, m.kernels[0], spec)}["race-free: global"]
    assert (ob.status, ob.rule, ob.severity()) == ("violated", "race.global.same-value", "warning")
    assert ob.message.startswith("same-value data race on global memory: write at "
                                 "tests/data/same_value/mark_seen.cu:6:5")
    rc = main(["check", str(DATA / "mark_seen.ptx"), *LAUNCH])
    out = capsys.readouterr().out
    assert rc == 0 and "kernel mark_seen: VERIFIED" in out, out

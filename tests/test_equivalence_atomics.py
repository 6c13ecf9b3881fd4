"""kverify equiv with atomics: integer atomics (also at data-dependent addresses) are
order-independent folds and are proved under ``int``; float atomic sums are proved under
``real`` and are ``unknown`` under ``bitexact`` (order-dependent rounding); an atom whose
returned value is read falls back to testing; seeded bugs are refuted with counterexamples
the interpreter replays."""
import json

import pytest
import z3

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import check_pair, equivalence_report, load_side
from kverify.verifier.equivalence import folds as F

PAIRS = {p["name"]: p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]}


def _run(name, tmp_path, model=None, **kw):
    p = PAIRS[name]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      ref_launch=p.get("ref_launch", p["launch"]), model=model or p["model"],
                                      cex_dir=str(tmp_path), test_examples=2, **kw)
    return rep, results[0][1]


def test_shared_atomic_histogram_is_proved_equal_to_the_global_atomic_one(tmp_path):
    rep, r = _run("histogram_shared_vs_global_atomics", tmp_path)
    assert r.verdict == "proved", r.message
    assert r.model == "int" and rep.verdict == "verified"
    assert r.elements == 64 and r.structural == 64 and r.solver == 0
    assert r.message == "all 64 output elements equal for all inputs (64 by identical normal forms, 0 by the solver)"
    # the flush of the shared bins corresponds to the global atomic
    assert {"candidate": "histogram.cu:22", "reference": ["histogram_global.cu:10"]} in r.correspondence


def _replays(c, capsys):
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    return capsys.readouterr().out


def test_dropped_flush_of_the_last_bin_is_refuted_at_that_bin(tmp_path, capsys):
    rep, r = _run("histogram_drop_last_bin", tmp_path)
    assert r.verdict == "refuted", r.message
    assert rep.obligations[0].rule == "equivalence.mismatch"
    c = r.counterexample
    assert (c["buffer"], c["index"], c["candidate_value"], c["reference_value"]) == ("bins", 63, 0, 1)
    assert c["candidate_line"] == "never written" and c["reference_line"] == "histogram_global.cu:10"
    assert c["inputs"] == {"data": {"nonzero": {"0": 63}, "nonzero_count": 1, "role": "input"}}
    assert "differs at flat index 63:" in _replays(c, capsys)


def test_wrong_bin_is_refuted_at_the_bin_it_overfills(tmp_path, capsys):
    rep, r = _run("histogram_wrong_bin", tmp_path)
    assert r.verdict == "refuted", r.message
    c = r.counterexample
    assert (c["buffer"], c["index"], c["candidate_value"], c["reference_value"]) == ("bins", 0, 1024, 1023)
    assert c["candidate_line"] == "histogram__wrong_bin.cu:24" and c["reference_line"] == "histogram_global.cu:10"
    assert c["inputs"] == {"data": {"nonzero": {"0": 32}, "nonzero_count": 1, "role": "input"}}
    assert "differs at flat index 0:" in _replays(c, capsys)


def test_float_atomic_sum_is_proved_over_reals(tmp_path):
    rep, r = _run("sum_atomic_vs_sequential", tmp_path)
    assert r.verdict == "proved" and r.model == "real", r.message
    assert r.elements == 1 and r.structural == 1


def test_float_atomic_sum_is_unknown_under_bitexact_because_the_order_rounds(tmp_path):
    p = PAIRS["sum_atomic_vs_sequential"]
    cand = load_side(str(ZOO / p["candidate"]), p["launch"], {})
    ref = load_side(str(ZOO / p["reference"]), p["ref_launch"], {})
    r = check_pair(cand, ref, "bitexact", test_on_unknown=False)
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (not expressible in the bitexact model): atom.global.add.f32: "
                         "two or more float atomic adds to one location are order-dependent under the bitexact "
                         "model (rounding depends on the order of the additions; --fp real proves the sum over "
                         "reals) at sum_atomic.cu:21 (atom.global.add.f32)")


def test_half_tree_before_the_float_atomic_is_refuted(tmp_path, capsys):
    rep, r = _run("sum_atomic_half_tree", tmp_path)
    assert r.verdict == "refuted", r.message
    c = r.counterexample
    assert (c["buffer"], c["index"]) == ("out", 0)
    assert c["candidate_line"] == "sum_atomic__half_tree.cu:23" and c["reference_line"] == "sum_seq.cu:9"
    assert "differs at flat index 0:" in _replays(c, capsys)


# ---------------------------------------------------------------------- small PTX kernels of our own
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"

TICKET = HEAD + """
.visible .entry ticket(.param .u64 ctr, .param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [ctr];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r1, %tid.x;
  atom.global.add.u32 %r2, [%rd3], 1;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u32 [%rd6], %r2;
  ret;
}
"""


def _scatter(mask, guard=False, op="add.u32", reverse=False):
    """Every thread adds data[tid] to bins[data[tid] & mask] (``op``: another reduction);
    ``guard``: only a nonzero data[tid] is added, behind a branch on it; ``reverse``: thread
    tid takes element 7 - tid, so the atomics come in the opposite order."""
    body = (f"  setp.eq.u32 %p1, %r2, 0;\n  @%p1 bra DONE;\n  red.global.{op} [%rd8], %r2;\nDONE:\n"
            if guard else f"  red.global.{op} [%rd8], %r2;\n")
    tid = "  mov.u32 %r0, %tid.x;\n  sub.u32 %r1, 7, %r0;\n" if reverse else "  mov.u32 %r1, %tid.x;\n"
    return HEAD + f"""
.visible .entry scatter(.param .u64 data, .param .u64 bins)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [bins];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
{tid}  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.global.u32 %r2, [%rd6];
  and.b32 %r3, %r2, {mask};
  mul.wide.u32 %rd7, %r3, 4;
  add.s64 %rd8, %rd4, %rd7;
{body}  ret;
}}
"""


def _side(tmp_path, name, text, launch):
    f = tmp_path / f"{name}.ptx"
    f.write_text(text)
    return load_side(str(f), launch, {})


SCATTER_LAUNCH = {"grid": [1, 1, 1], "block": [8, 1, 1], "args": {},
                  "buffers": {"data": {"dtype": "uint32", "shape": [8]}, "bins": {"dtype": "uint32", "shape": [16]}},
                  "outputs": ["bins"]}


def test_an_atom_whose_result_is_read_falls_back_to_testing(tmp_path):
    launch = {"grid": [1, 1, 1], "block": [32, 1, 1], "args": {},
              "buffers": {"ctr": {"dtype": "uint32", "shape": [1]}, "out": {"dtype": "uint32", "shape": [32]}},
              "outputs": ["ctr", "out"]}
    s = _side(tmp_path, "ticket", TICKET, launch)
    r = check_pair(s, s, "int", test_examples=2, cex_dir=str(tmp_path))
    assert r.verdict == "tested"
    assert r.message.startswith("symbolic execution stopped (unsupported): atom.global.add.u32: the value it "
                                "returns is read, and it depends on the order in which threads perform the atomics")


def test_a_data_dependent_atomic_address_that_can_leave_its_buffer_is_unknown(tmp_path):
    s = _side(tmp_path, "scatter31", _scatter(31), SCATTER_LAUNCH)
    r = check_pair(s, s, "int", test_on_unknown=False)
    assert r.verdict == "unknown"
    assert ("red.global.add.u32: its data-dependent address into buffer bins may fall outside it (64 bytes)"
            in r.message)
    ok = _side(tmp_path, "scatter15", _scatter(15), SCATTER_LAUNCH)
    assert check_pair(ok, ok, "int", test_on_unknown=False).verdict == "proved"


def test_a_guarded_atomic_on_a_data_branch_is_if_converted_and_proved(tmp_path):
    """``if (x != 0) atomicAdd(&bins[x & 15], x)`` equals the unguarded atomic: adding 0 is
    the identity. The guard becomes a conditional contribution; the solver closes it."""
    g = _side(tmp_path, "guarded", _scatter(15, guard=True), SCATTER_LAUNCH)
    u = _side(tmp_path, "plain", _scatter(15), SCATTER_LAUNCH)
    r = check_pair(g, u, "int", test_on_unknown=False)
    assert r.verdict == "proved", r.message
    # a wrong mask is refuted, and the interpreter confirms it
    w = _side(tmp_path, "wrong", _scatter(7), SCATTER_LAUNCH)
    r = check_pair(w, u, "int", test_on_unknown=False, cex_dir=str(tmp_path))
    assert r.verdict == "refuted" and r.counterexample["buffer"] == "bins"


def test_a_data_branch_is_still_unknown_under_real(tmp_path):
    g = _side(tmp_path, "guarded", _scatter(15, guard=True), SCATTER_LAUNCH)
    r = check_pair(g, g, "real", test_on_unknown=False)
    assert r.verdict == "unknown" and "depends on input data" in r.message


# ---------------------------------------------------------------------- folds
def _fold(op, items, w=32):
    f = F.Fold(op, w)
    for x in items:
        f.add(x)
    return f


@pytest.mark.parametrize("op", ["add", "xor", "and", "or", "min.u", "min.s", "max.u", "max.s"])
def test_a_fold_does_not_depend_on_the_order_of_its_contributions(op):
    xs = [z3.BitVec(f"x[{i}]", 32) for i in range(6)] + [3, 5]
    a, b = _fold(op, xs), _fold(op, list(reversed(xs)))
    assert F.compare(a, b) == ("equal", None)
    # and the claim is true: z3 agrees on the materialized terms
    s = z3.Solver()
    s.add(a.z3() != b.z3())
    assert s.check() == z3.unsat


def test_a_fold_missing_one_contribution_differs_on_a_small_input():
    xs = [z3.BitVec(f"x[{i}]", 32) for i in range(6)]
    st, assign = F.compare(_fold("add", xs), _fold("add", xs[:-1]))
    assert st == "differ" and assign["x[5]"] != 0
    assert all(v == 0 for k, v in assign.items() if k != "x[5]")


def test_a_guard_saying_the_count_is_not_the_identity_is_dropped():
    count = _fold("add", [z3.BitVec("c[0]", 32), z3.BitVec("c[1]", 32)])
    eq, ne = F.lazy_family(None, "setp", "s32", frozenset({"eq"}), [count, 0], [32, 32])
    assert ne.op == "ne" and eq.negate().op == "ne"
    g = F.Fold("add", 32)
    g.add_guarded(ne, count)
    assert F.compare(g, count) == ("equal", None)


def _clamp(branchy):
    """y[tid] = max(x[tid], 5): with a branch on x (a store on each side), or with max.s32."""
    if branchy:
        body = """  setp.gt.s32 %p1, %r2, 5;
  @%p1 bra BIG;
  mov.u32 %r3, 5;
  st.global.u32 [%rd8], %r3;
  bra.uni END;
BIG:
  st.global.u32 [%rd8], %r2;
END:
"""
    else:
        body = "  max.s32 %r3, %r2, 5;\n  st.global.u32 [%rd8], %r3;\n"
    return HEAD + f"""
.visible .entry clamp(.param .u64 x, .param .u64 y)
{{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd8, %rd4, %rd5;
  ld.global.u32 %r2, [%rd6];
{body}  ret;
}}
"""


def test_stores_on_both_sides_of_a_data_branch_are_if_converted(tmp_path):
    launch = {"grid": [1, 1, 1], "block": [4, 1, 1], "args": {},
              "buffers": {"x": {"dtype": "int32", "shape": [4]}, "y": {"dtype": "int32", "shape": [4]}},
              "outputs": ["y"]}
    b = _side(tmp_path, "branchy", _clamp(True), launch)
    m = _side(tmp_path, "max", _clamp(False), launch)
    r = check_pair(b, m, "int", test_on_unknown=False)
    assert r.verdict == "proved" and r.elements == 4, r.message


@pytest.mark.parametrize("op", ["add.u32", "max.u32", "min.s32", "or.b32", "xor.b32", "and.b32"])
def test_scattered_atomics_in_the_opposite_order_are_proved_and_another_operator_refuted(tmp_path, op):
    fwd = _side(tmp_path, "fwd", _scatter(15, op=op), SCATTER_LAUNCH)
    rev = _side(tmp_path, "rev", _scatter(15, op=op, reverse=True), SCATTER_LAUNCH)
    r = check_pair(rev, fwd, "int", test_on_unknown=False)
    assert r.verdict == "proved" and r.structural == 16 and r.solver == 0, r.message
    other = "add.u32" if op != "add.u32" else "xor.b32"
    bad = _side(tmp_path, "other", _scatter(15, op=other, reverse=True), SCATTER_LAUNCH)
    r = check_pair(bad, fwd, "int", test_on_unknown=False, cex_dir=str(tmp_path))
    assert r.verdict == "refuted" and r.counterexample["buffer"] == "bins", r.message


def test_reading_shared_bins_before_the_barrier_is_unknown(tmp_path):
    """histogram__missing_sync reads its shared bins with no barrier after the atomics: the
    value read depends on the order of the atomics, so nothing is claimed."""
    p = PAIRS["histogram_shared_vs_global_atomics"]
    cand = load_side(str(ZOO / "histogram" / "histogram__missing_sync.ptx"), p["launch"], {})
    ref = load_side(str(ZOO / p["reference"]), p["ref_launch"], {})
    # the concrete witnesses run the racy kernel first and may already refute it; the symbolic
    # guard is what this test is about
    r = check_pair(cand, ref, "int", test_on_unknown=False, witnesses=False)
    assert r.verdict == "unknown"
    assert ("atom.shared.add.u32: a load read this location before this atomic with no barrier between them; "
            "the value it read depends on the order of the atomics at histogram__missing_sync.cu:18") in r.message

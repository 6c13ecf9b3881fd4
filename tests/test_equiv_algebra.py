"""The ``real``-model algebra of ``kverify equiv`` (kverify/verifier/equivalence/realterm.py):
the exp/exp2/log laws, max/min as a lattice, the online-softmax rescaling identity, division
as multiplication by an inverse (with its nonzero assumption), module-scope ``.global``
constants; the zoo pairs that need them (a warp-level online softmax and a Triton
``tl.exp2`` softmax against the two-pass CUDA softmax) and their seeded-bug twins; and the
soundness of the normal forms (hypothesis: terms with equal normal forms agree at random
real points, and every normal form has its term's value)."""
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import equivalence_report
from kverify.verifier.equivalence import realterm as R
from kverify.verifier.equivalence.algebra import RealAlgebra
from kverify.verifier.equivalence.counterexample import _eval

PAIRS = {p["name"]: p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]}
L32 = R.LOG2E_ROUNDINGS["f32 0x3FB8AA3B"]
LHL = R.LOG2E_ROUNDINGS["expf hi+lo 0x3FB8AA3B+0x32A57060"]


def _run(name, tmp_path):
    p = PAIRS[name]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      ref_launch=p.get("ref_launch", p["launch"]), model=p["model"],
                                      cex_dir=str(tmp_path), test_examples=2)
    return rep, results[0][1]


# ---------------------------------------------------------------------------- zoo pairs
def test_warp_online_softmax_with_exp2f_is_proved_against_the_two_pass_softmax(tmp_path):
    rep, r = _run("softmax_warp_online_vs_two_pass", tmp_path)
    assert r.verdict == "proved", r.message
    assert r.model == "real" and r.elements == 400 and r.structural == 400
    o = rep.obligations[0].to_json()
    assert o["status"] == "proved" and o["equivalence"] == "proved" and o["model"] == "real"
    # the candidate's exp2f(x * 1.4426950f) and the reference's expf meet through log2(e)
    assert any("log2(e)" in a and "f32 0x3FB8AA3B" in a and "expf hi+lo" in a for a in o["assumptions"])
    assert r.time_s < 30


def test_warp_online_softmax_rescaling_the_wrong_way_is_refuted(tmp_path, capsys):
    rep, r = _run("softmax_warp_inverted_rescale", tmp_path)
    assert r.verdict == "refuted", r.message
    assert rep.obligations[0].rule == "equivalence.mismatch" and r.model == "real"
    c = r.counterexample
    assert c["confirmed"] and c["buffer"] == "y" and c["index"] == 0 and c["index_nd"] == [0, 0]
    assert c["candidate_line"] == "softmax_warp__inverted_rescale.cu:45"
    assert c["reference_line"] == "softmax.cu:45"
    assert abs(c["candidate_value"] - c["reference_value"]) > 1e-3
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert "differs at flat index 0:" in capsys.readouterr().out


def test_triton_exp2_softmax_is_proved_against_the_cuda_softmax(tmp_path):
    rep, r = _run("triton_softmax_exp2_vs_cuda", tmp_path)
    assert r.verdict == "proved", r.message
    assert r.model == "real" and r.elements == 400
    o = rep.obligations[0].to_json()
    assert o["equivalence"] == "proved"
    assert any("log2(e)" in a and "f32 0x3FB8AA3B" in a for a in o["assumptions"])
    assert r.time_s < 30


def test_triton_exp2_softmax_without_the_log2e_scale_is_refuted(tmp_path, capsys):
    rep, r = _run("triton_softmax_exp2_no_log2e", tmp_path)
    assert r.verdict == "refuted", r.message
    c = r.counterexample
    assert c["confirmed"] and c["buffer"] == "y" and c["index"] == 0
    assert c["candidate_line"] == "tests/zoo/triton/generate_softmax.py:61"
    assert c["reference_line"] == "softmax.cu:45"
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert "differs at flat index 0:" in capsys.readouterr().out


def test_the_triton_softmax_module_global_no_longer_stops_symbolic_execution():
    text = (ZOO / "triton" / "softmax_exp2.ptx").read_text()
    assert ".global .align 1 .b8 _$_str[11]" in text  # what libdevice brings along


# ---------------------------------------------------------------------------- module-scope globals
_GLOBAL_PTX = """
.version 8.0
.target sm_90a
.address_size 64

{decl}

.visible .entry scale_by_flag(.param .u64 x, .param .u64 y)
{{
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u64 %rd6, __CUDA_FTZ;
    ld.global.u32 %r2, [%rd6];
    {store}
    setp.ne.u32 %p1, %r2, 0;
    @%p1 add.f32 %f1, %f1, %f1;
    st.global.f32 [%rd5], %f1;
    ret;
}}
"""
_DOUBLE_PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry double_it(.param .u64 x, .param .u64 y)
{{
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    mul.f32 %f2, %f1, {factor};
    st.global.f32 [%rd5], %f2;
    ret;
}}
"""
_LAUNCH = {"grid": [1, 1, 1], "block": [32, 1, 1], "args": {},
           "buffers": {"x": {"dtype": "float32", "shape": [32]}, "y": {"dtype": "float32", "shape": [32]}},
           "outputs": ["y"]}


def _globals_pair(tmp_path, decl, store="", factor="0f40000000"):
    c = tmp_path / "flag.ptx"
    c.write_text(_GLOBAL_PTX.format(decl=decl, store=store))
    r = tmp_path / "double.ptx"
    r.write_text(_DOUBLE_PTX.format(factor=factor))
    _, results = equivalence_report(str(c), str(r), launch=_LAUNCH, ref_launch=_LAUNCH, model="real",
                                    cex_dir=str(tmp_path), test_examples=2)
    return results[0][1]


def test_an_initialized_module_global_reads_as_its_constant(tmp_path):
    r = _globals_pair(tmp_path, ".global .align 4 .u32 __CUDA_FTZ = 1;")
    assert r.verdict == "proved", r.message
    assert any("__CUDA_FTZ hold their initializers" in a for a in r.assumptions)
    r = _globals_pair(tmp_path, ".global .align 4 .u32 __CUDA_FTZ = 0;")  # the flag off: y = x, not 2x
    assert r.verdict == "refuted", r.message
    assert r.counterexample["buffer"] == "y"


def test_a_module_global_without_initializer_or_written_stays_unknown(tmp_path):
    # the reference is y = x: what the kernel computes when __CUDA_FTZ holds 0 (as the interpreter's
    # zero-filled globals do), so testing finds no difference and the verdict is `tested`
    r = _globals_pair(tmp_path, ".global .align 4 .u32 __CUDA_FTZ;", factor="0f3F800000")
    assert r.verdict == "tested", r.message
    assert "a load of module-scope .global variable __CUDA_FTZ, which has no initializer" in r.message
    r = _globals_pair(tmp_path, ".global .align 4 .u32 __CUDA_FTZ = 0;", store="st.global.u32 [%rd6], 0;",
                      factor="0f3F800000")
    assert r.verdict == "tested", r.message
    assert "a store to module-scope .global variable __CUDA_FTZ" in r.message


# ---------------------------------------------------------------------------- laws
@pytest.fixture
def A():
    return RealAlgebra().A


def _xs(A, n=6):
    return [A.var(f"x[{i}]") for i in range(n)]


def test_exp_laws_and_log2e_roundings(A):
    a, b, c = _xs(A, 3)
    assert A.mul(A.ex2(a), A.ex2(b)) == A.ex2(A.add(a, b))
    assert A.ex2(R.ZERO) == R.const(1) and A.ex2(R.const(3)) == R.const(8)
    assert A.lg2(A.ex2(a)) == a and A.lg2(R.const(8)) == R.const(3) and A.lg2(R.const(Fraction(1, 4))) == R.const(-2)
    # exp(x) written three ways: CUDA expf (hi+lo pair), exp2f(x * log2e_f32), and the f64 constant
    e1 = A.ex2(A.scale(a, LHL))
    e2 = A.ex2(A.scale(a, L32))
    e3 = A.ex2(A.scale(a, R.LOG2E_ROUNDINGS["f64 0x3FF71547652B82FE"]))
    assert e1 == e2 == e3
    assert A.log2e_read == set(R.LOG2E_ROUNDINGS)
    # but not any constant: 1.4427 is not a rounding of log2(e), and exp2(x) is not exp(x)
    assert A.ex2(A.scale(a, Fraction(14427, 10000))) != e2
    assert A.ex2(a) != e2
    # a scaled exponent keeps its scale: exp(x/8) is 2**(x * log2e / 8), and an f32 softmax
    # scale (1/sqrt(96) rounded) applied before either exponential is kept exactly
    assert A.ex2(A.scale(a, L32 / 8)) == A.ex2(A.scale(a, LHL / 8)) != e2
    s96 = Fraction(float(np.float32(1 / np.sqrt(96))))
    assert A.ex2(A.scale(A.scale(a, s96), L32)) == A.ex2(A.scale(A.scale(a, LHL), s96)) != e2
    # a constant the compiler folded from log2(e) and the scale is not recognized (documented)
    folded = Fraction(float(np.float32(float(L32) * float(s96))))
    assert A.ex2(A.scale(a, folded)) != A.ex2(A.scale(A.scale(a, s96), L32))


def test_max_and_min_are_a_lattice_with_shifts_and_positive_scaling(A):
    a, b, c, d = _xs(A, 4)
    mx = lambda *v: A.maxmin("max", list(v))  # noqa: E731
    mn = lambda *v: A.maxmin("min", list(v))  # noqa: E731
    assert mx(a, a) == a and mx(a, b) == mx(b, a)
    assert mx(mx(a, b), c) == mx(a, mx(b, c)) == mx(c, b, a, R.NEG_INF)
    assert mx(a, b, R.POS_INF) is R.POS_INF
    assert A.sub(mx(a, b), c) == mx(A.sub(a, c), A.sub(b, c))
    assert A.add(mx(a, b), R.const(3)) == mx(A.add(a, R.const(3)), A.add(b, R.const(3)))
    assert A.scale(mx(a, b), Fraction(5, 2)) == mx(A.scale(a, Fraction(5, 2)), A.scale(b, Fraction(5, 2)))
    assert A.scale(mx(a, b), -1) == mn(A.neg(a), A.neg(b))
    assert mn(a, b) == A.neg(mx(A.neg(a), A.neg(b))) and mn(a, mn(b, c)) == mn(mn(a, b), c)
    assert mx(a, R.const(0)) != a and mx(a, b) != mx(a, c)
    assert mx(R.const(1), R.const(4), a) == mx(a, R.const(4))


def test_the_online_softmax_rescaling_identity(A):
    xs = _xs(A)
    m_old = A.maxmin("max", xs[:3])
    m_new = A.maxmin("max", xs)
    e = lambda p: A.ex2(A.scale(p, LHL))  # noqa: E731  expf
    s_old = R.ZERO
    s_new = R.ZERO
    for x in xs[:3]:
        s_old = A.add(s_old, e(A.sub(x, m_old)))
        s_new = A.add(s_new, e(A.sub(x, m_new)))
    # sum exp(x_i - m) = exp(m' - m) * sum exp(x_i - m')
    assert A.mul(e(A.sub(m_old, m_new)), s_old) == s_new
    # a softmax ratio does not depend on the max subtracted (nor on whether one is)
    plain = R.ZERO
    for x in xs[:3]:
        plain = A.add(plain, e(x))
    r1 = A.mul(e(A.sub(xs[0], m_old)), A.inv(s_old))
    r2 = A.mul(e(A.sub(xs[0], m_new)), A.inv(s_new))
    r3 = A.mul(e(xs[0]), A.inv(plain))
    assert r1 == r2 == r3
    assert not A.nonzero  # exp is never zero: no assumption was needed
    # the rescaling the wrong way round is a different term
    wrong = A.mul(e(A.sub(m_new, m_old)), s_old)
    assert wrong != s_new


def test_division_is_multiplication_by_an_inverse_with_a_recorded_assumption(A):
    a, b, c = _xs(A, 3)
    assert A.mul(A.inv(a), a) == R.const(1)
    assert A.nonzero == {a: None}
    ab = A.mul(a, b)
    assert A.mul(A.mul(c, ab), A.inv(ab)) == c
    s = A.add(a, b)
    assert A.mul(A.mul(c, A.inv(s)), s) == c
    assert s in A.nonzero
    assert A.inv(A.inv(s)) == s and A.inv(A.scale(s, 4)) == A.scale(A.inv(s), Fraction(1, 4))
    assert A.inv(A.ex2(a)) == A.ex2(A.neg(a))
    assert A.mul(A.inv(a), b) != A.mul(A.inv(b), a)
    with pytest.raises(R.RealUnsupported):
        A.inv(R.ZERO)


def test_subterms_are_shared(A):
    a, b = _xs(A, 2)
    s1 = A.add(a, b)
    s2 = A.add(b, a)
    i1, i2 = A.inv(s1), A.inv(s2)
    (m1,), (m2,) = i1.terms, i2.terms
    assert m1 == m2  # one atom
    assert A.by_id[m1[0]].args[0] is A.by_id[m2[0]].args[0]


def test_the_nonzero_assumption_reaches_the_report(tmp_path):
    # x / x (candidate) against 1 (reference) is proved only by assuming x != 0; build both in PTX
    body = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 y)
{{
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    {op}
    st.global.f32 [%rd5], %f2;
    ret;
}}
"""
    c, r = tmp_path / "c.ptx", tmp_path / "r.ptx"
    c.write_text(body.format(op="div.rn.f32 %f2, %f1, %f1;"))
    r.write_text(body.format(op="mov.f32 %f2, 0f3F800000;"))
    _, results = equivalence_report(str(c), str(r), launch=_LAUNCH, ref_launch=_LAUNCH, model="real",
                                    cex_dir=str(tmp_path), test_examples=2)
    res = results[0][1]
    assert res.verdict == "proved", res.message
    assert any(a.startswith("real model: nonzero denominators: inv(d)*d = 1 was used for d = x[") for a in res.assumptions)


# ---------------------------------------------------------------------------- soundness
LEAVES = st.one_of(
    st.tuples(st.just("var"), st.integers(0, 2)),
    st.tuples(st.just("const"), st.sampled_from([Fraction(0), Fraction(1), Fraction(-2), Fraction(1, 2), Fraction(3),
                                                 L32, LHL, L32 / 2])),
)


def _grow(children):
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul", "max", "min", "expsum", "cancel"]), children, children),
        st.tuples(st.sampled_from(["ex2", "inv", "lg2", "neg"]), children),
        # 1 / (2**a + 2**b) and lg2(2**a + 2**b): the sums the softmax normal forms factor
        st.tuples(st.sampled_from(["inv", "lg2"]), st.tuples(st.just("expsum"), children, children)),
    )


EXPRS = st.recursive(LEAVES, _grow, max_leaves=7)


def _nf(A, e):
    op = e[0]
    if op == "var":
        return A.var(f"v[{e[1]}]")
    if op == "const":
        return R.const(e[1])
    args = [_nf(A, x) for x in e[1:]]
    if op in ("add", "sub", "mul"):
        return {"add": A.add, "sub": A.sub, "mul": A.mul}[op](*args)
    if op in ("max", "min"):
        return A.maxmin(op, args)
    if op == "expsum":
        return A.add(A.ex2(args[0]), A.ex2(args[1]))
    if op == "cancel":  # (a / b) * b
        return A.mul(A.mul(args[0], A.inv(args[1])), args[1])
    return {"ex2": A.ex2, "inv": A.inv, "lg2": A.lg2, "neg": A.neg}[op](args[0])


def _value(e, env):
    """The term's value, None where it is undefined (a zero denominator, lg2 of a value <= 0)."""
    op = e[0]
    if op == "var":
        return env[e[1]]
    if op == "const":
        return float(e[1])
    args = [_value(x, env) for x in e[1:]]
    if any(a is None or not math.isfinite(a) or abs(a) > 1e6 for a in args):
        return None
    a = args[0]
    if op == "add":
        return a + args[1]
    if op == "sub":
        return a - args[1]
    if op == "mul":
        return a * args[1]
    if op == "max":
        return max(args)
    if op == "min":
        return min(args)
    if op == "neg":
        return -a
    if op == "cancel":
        return (a / args[1]) * args[1] if abs(args[1]) > 1e-6 else None
    if op == "expsum":
        return 2.0 ** a + 2.0 ** args[1] if max(a, args[1]) < 60 else None
    if op == "ex2":
        return 2.0 ** a if a < 60 else None
    if op == "inv":
        return 1.0 / a if abs(a) > 1e-6 else None
    if op == "lg2":
        return math.log2(a) if a > 1e-9 else None
    raise AssertionError(op)


class _Alg:
    def __init__(self, A):
        self.A = A


def _close(x, y):
    return x is not None and y is not None and math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-6)


POINTS = [np.random.default_rng(s).uniform(-2, 2, 3).tolist() for s in range(12)]


def _nf_or_none(A, e):
    try:
        return _nf(A, e)
    except R.RealUnsupported:
        return None


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(EXPRS)
def test_every_normal_form_has_the_value_of_its_term(e):
    A = RealAlgebra().A
    p = _nf_or_none(A, e)
    if p is None or isinstance(p, R.Inf):
        return
    alg = _Alg(A)
    for pt in POINTS:
        want = _value(e, pt)
        if want is None or abs(want) > 1e5:
            continue  # undefined there: a zero denominator (the recorded assumption) or lg2 of x <= 0
        got = _eval(alg, p, {f"v[{i}]": x for i, x in enumerate(pt)})
        assert _close(got, want), (e, R.show(p, A), pt, got, want)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.recursive(LEAVES, _grow, max_leaves=4), st.recursive(LEAVES, _grow, max_leaves=4))
def test_terms_with_equal_normal_forms_agree_at_random_real_points(e1, e2):
    A = RealAlgebra().A
    p1, p2 = _nf_or_none(A, e1), _nf_or_none(A, e2)
    if p1 is None or p2 is None or p1 != p2:
        return
    for pt in POINTS:
        v1, v2 = _value(e1, pt), _value(e2, pt)
        if v1 is None or v2 is None or abs(v1) > 1e5:
            continue
        assert _close(v1, v2), (e1, e2, pt, v1, v2)


def test_a_launch_without_the_dynamic_shared_memory_it_uses_is_never_proved():
    """Triton's cross-warp reduction lives in dynamic shared memory (metadata.shared = 16
    bytes). Launched with none, the accesses fall outside the launch's shared memory: the
    symbolic walk stops there instead of proving what no GPU computes."""
    from kverify.verifier.equivalence import check_pair, load_side

    p = PAIRS["triton_softmax_exp2_vs_cuda"]
    launch = {k: v for k, v in p["launch"].items() if k != "shared_bytes"}
    cand = load_side(str(ZOO / p["candidate"]), launch, {})
    ref = load_side(str(ZOO / p["reference"]), p["ref_launch"], {})
    r = check_pair(cand, ref, "real", test_on_unknown=False)
    assert r.verdict == "unknown"
    assert "a shared-memory access at offset 0, beyond the 0 bytes of shared memory of this launch" in r.message
    r = check_pair(load_side(str(ZOO / p["candidate"]), p["launch"], {}), ref, "real", test_on_unknown=False)
    assert r.verdict == "proved", r.message

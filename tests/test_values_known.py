"""Hand-checked PTX results, each evaluated in both the concrete and the symbolic domain."""
from __future__ import annotations

import math

import numpy as np
import pytest
import z3

from kverify.semantics.values import (
    FAMILIES, ConcreteDomain, Z3Domain, bits, bits_to_float, evaluate, float_to_bits, is_approximate, is_float,
)

C = ConcreteDomain()
Z = Z3Domain()
NAN32 = 0x7FFFFFFF


def _bits(ty, v):
    if ty == "pred":
        return bool(v)
    if is_float(ty) and isinstance(v, float):
        return float_to_bits(ty, v)
    return v & ((1 << bits(ty)) - 1)


def ev(fam, ty, mods, *args):
    """args: (type, value) pairs; floats are converted to the type's bit pattern.
    Returns the result(s) as Python ints/bools, checked equal in both domains."""
    vals = [v if t == "imm" else _bits(t, v) for t, v in args]
    cargs, zargs = [], []
    for (t, _), v in zip(args, vals):
        if t == "imm":
            cargs.append(v)
            zargs.append(v)
        elif t == "pred":
            cargs.append(np.array([v]))
            zargs.append(z3.BoolVal(v))
        else:
            cargs.append(np.array([v], dtype=np.uint64))
            zargs.append(z3.BitVecVal(v, bits(t)))
    c = evaluate(C, fam, ty, mods, *cargs)
    s = evaluate(Z, fam, ty, mods, *zargs)
    c, s = (c, s) if isinstance(c, tuple) else ((c,), (s,))
    out = []
    for cv, sv in zip(c, s):
        sv = z3.simplify(sv)
        if z3.is_bool(sv):
            assert bool(cv[0]) == z3.is_true(sv)
            out.append(bool(cv[0]))
        else:
            assert int(cv[0]) == sv.as_long()
            out.append(int(cv[0]))
    return out[0] if len(out) == 1 else tuple(out)


def f32(x):
    return float_to_bits("f32", x)


def s32(v):
    return v - (1 << 32) if v >> 31 else v


# ------------------------------------------------------------------ float rounding
def test_add_f32_directed_rounding_of_a_sum_between_two_floats():
    a, b = ("f32", 1.0), ("f32", 2.0**-30)
    assert ev("add", "f32", {"rn"}, a, b) == 0x3F800000
    assert ev("add", "f32", {"rz"}, a, b) == 0x3F800000
    assert ev("add", "f32", {"rm"}, a, b) == 0x3F800000
    assert ev("add", "f32", {"rp"}, a, b) == 0x3F800001
    assert ev("add", "f32", {"rm"}, ("f32", -1.0), ("f32", -(2.0**-30))) == 0xBF800001
    assert ev("add", "f32", {"rz"}, ("f32", -1.0), ("f32", -(2.0**-30))) == 0xBF800000


def test_add_default_rounding_is_rn_and_ties_go_to_even():
    # 1 + 2^-24 is exactly half an ulp above 1: ties to even -> 1.0; 1+2^-23 + 2^-24 -> up
    assert ev("add", "f32", (), ("f32", 1.0), ("f32", 2.0**-24)) == 0x3F800000
    assert ev("add", "f32", (), ("f32", 1.0 + 2.0**-23), ("f32", 2.0**-24)) == 0x3F800002


def test_add_f64_directed():
    assert ev("add", "f64", {"rz"}, ("f64", 1.0), ("f64", 2.0**-60)) == float_to_bits("f64", 1.0)
    assert ev("add", "f64", {"rp"}, ("f64", 1.0), ("f64", 2.0**-60)) == float_to_bits("f64", 1.0 + 2.0**-52)


def test_exact_cancellation_sign_depends_on_rounding_mode():
    assert ev("sub", "f32", {"rn"}, ("f32", 1.5), ("f32", 1.5)) == 0
    assert ev("sub", "f32", {"rm"}, ("f32", 1.5), ("f32", 1.5)) == 0x80000000


def test_div_f32_rounding_of_one_third():
    assert ev("div", "f32", {"rn"}, ("f32", 1.0), ("f32", 3.0)) == 0x3EAAAAAB
    assert ev("div", "f32", {"rz"}, ("f32", 1.0), ("f32", 3.0)) == 0x3EAAAAAA
    assert ev("rcp", "f32", {"rn"}, ("f32", 3.0)) == 0x3EAAAAAB
    assert ev("div", "f32", {"rn"}, ("f32", 1.0), ("f32", 0.0)) == 0x7F800000
    assert ev("div", "f32", {"rn"}, ("f32", 0.0), ("f32", 0.0)) == NAN32


def test_sqrt_f32_two_rounds_down_except_rp():
    for rm in ("rn", "rz", "rm"):
        assert ev("sqrt", "f32", {rm}, ("f32", 2.0)) == 0x3FB504F3
    assert ev("sqrt", "f32", {"rp"}, ("f32", 2.0)) == 0x3FB504F4
    assert ev("sqrt", "f32", {"rn"}, ("f32", -1.0)) == NAN32
    assert ev("sqrt", "f32", {"rn"}, ("f32", -0.0)) == 0x80000000


def test_fma_rounds_once():
    e = 2.0**-23
    # (1+e)(1-e) - 1 = -e^2 exactly; a separate mul would round the product to 1.0
    assert ev("fma", "f32", {"rn"}, ("f32", 1 + e), ("f32", 1 - e), ("f32", -1.0)) == f32(-(e * e))
    assert ev("mul", "f32", {"rn"}, ("f32", 1 + e), ("f32", 1 - e)) == 0x3F800000


def test_ftz_flushes_subnormal_inputs_and_results_to_signed_zero():
    tiny = ("f32", 2.0**-149)
    assert ev("add", "f32", {"rn"}, tiny, ("f32", 0.0)) == 1
    assert ev("add", "f32", {"rn", "ftz"}, tiny, ("f32", 0.0)) == 0
    assert ev("mul", "f32", {"rn", "ftz"}, ("f32", -(2.0**-70)), ("f32", 2.0**-70)) == 0x80000000
    assert ev("testp", "f32", {"subnormal"}, tiny) is True
    assert ev("testp", "f32", {"normal"}, ("f32", 0.0)) is True  # as an H200 answers (docs/validation.md)
    assert ev("testp", "f32", {"normal"}, tiny) is False


def test_sat_clamps_to_unit_interval_and_nan_to_zero():
    assert ev("add", "f32", {"sat"}, ("f32", 0.75), ("f32", 0.75)) == f32(1.0)
    assert ev("add", "f32", {"sat"}, ("f32", -0.75), ("f32", 0.25)) == 0
    assert ev("add", "f32", {"sat"}, ("f32", math.inf), ("f32", -math.inf)) == 0
    assert ev("mul", "f32", {"sat"}, ("f32", 0.5), ("f32", 0.5)) == f32(0.25)


def test_min_max_ignore_a_single_nan():
    assert ev("min", "f32", (), ("f32", math.nan), ("f32", 1.0)) == f32(1.0)
    assert ev("max", "f32", (), ("f32", 1.0), ("f32", math.nan)) == f32(1.0)
    assert ev("min", "f32", (), ("f32", math.nan), ("f32", math.nan)) == NAN32
    assert ev("min", "f32", {"NaN"}, ("f32", math.nan), ("f32", 1.0)) == NAN32
    assert ev("min", "f32", (), ("f32", 0.0), ("f32", -0.0)) == 0x80000000
    assert ev("max", "f32", (), ("f32", -0.0), ("f32", 0.0)) == 0


def test_bf16_rounding():
    # f32 0x3F808000 is the midpoint between bf16 0x3F80 and 0x3F81: ties to even
    assert ev("cvt", ("bf16", "f32"), {"rn"}, ("f32", 0x3F808000)) == 0x3F80
    assert ev("cvt", ("bf16", "f32"), {"rn"}, ("f32", 0x3F818000)) == 0x3F82
    assert ev("cvt", ("bf16", "f32"), {"rz"}, ("f32", 0x3F81FFFF)) == 0x3F81
    assert ev("cvt", ("bf16", "f32"), {"rp"}, ("f32", 0x3F810001)) == 0x3F82
    # bf16 add: 1 + 2^-8 is a tie at bf16 precision (8 bits)
    one = ("bf16", 0x3F80)
    assert ev("add", "bf16", {"rn"}, one, ("bf16", float_to_bits("bf16", 2.0**-8))) == 0x3F80
    assert ev("add", "bf16", {"rp"}, one, ("bf16", float_to_bits("bf16", 2.0**-8))) == 0x3F81


def test_f16_overflow_depends_on_rounding_mode():
    assert ev("cvt", ("f16", "f32"), {"rn"}, ("f32", 65520.0)) == 0x7C00
    assert ev("cvt", ("f16", "f32"), {"rz"}, ("f32", 65520.0)) == 0x7BFF
    assert ev("cvt", ("f16", "f32"), {"rz", "satfinite"}, ("f32", math.inf)) == 0x7BFF


def test_packed_cvt_puts_a_in_the_upper_half():
    assert ev("cvt", ("f16x2", "f32"), {"rn"}, ("f32", 1.0), ("f32", 2.0)) == 0x3C004000
    assert ev("add", "f16x2", {"rn"}, ("f16x2", 0x3C004000), ("f16x2", 0x3C003C00)) == 0x40004200


# ------------------------------------------------------------------ conversions
@pytest.mark.parametrize(
    "mode,x,want",
    [("rni", 2.5, 2), ("rni", 3.5, 4), ("rni", -2.5, -2), ("rzi", -2.7, -2), ("rmi", -2.1, -3), ("rpi", 2.1, 3)],
)
def test_cvt_float_to_int_rounding(mode, x, want):
    assert s32(ev("cvt", ("s32", "f32"), {mode}, ("f32", x))) == want


def test_cvt_float_to_int_clamps_and_maps_nan_to_zero():
    assert ev("cvt", ("s32", "f32"), {"rzi"}, ("f32", math.nan)) == 0
    assert ev("cvt", ("s32", "f32"), {"rzi"}, ("f32", 1e10)) == 0x7FFFFFFF
    assert ev("cvt", ("s32", "f32"), {"rzi"}, ("f32", -math.inf)) == 0x80000000
    assert ev("cvt", ("u32", "f32"), {"rzi"}, ("f32", -5.0)) == 0
    assert ev("cvt", ("s64", "f64"), {"rzi"}, ("f64", 2.0**63)) == (1 << 63) - 1
    assert ev("cvt", ("u8", "f16"), {"rni"}, ("f16", 300.0)) == 255
    assert ev("cvt", ("s32", "f32"), {"rpi"}, ("f32", 2.0**-149)) == 1
    assert ev("cvt", ("s32", "f32"), {"rpi", "ftz"}, ("f32", 2.0**-149)) == 0


def test_cvt_int_to_int():
    assert ev("cvt", ("u8", "s32"), {"sat"}, ("s32", 300)) == 255
    assert ev("cvt", ("u8", "s32"), {"sat"}, ("s32", -5)) == 0
    assert ev("cvt", ("s8", "s32"), (), ("s32", 300)) == 300 & 0xFF
    assert ev("cvt", ("u32", "s8"), (), ("s8", 0x80)) == 0xFFFFFF80
    assert ev("cvt", ("s32", "u64"), {"sat"}, ("u64", 1 << 40)) == 0x7FFFFFFF
    assert ev("cvt", ("u64", "s64"), {"sat"}, ("s64", -1)) == 0


def test_cvt_int_to_float_rounding():
    big = (1 << 24) + 1  # not representable in f32
    assert ev("cvt", ("f32", "u32"), {"rn"}, ("u32", big)) == f32(float(1 << 24))
    assert ev("cvt", ("f32", "u32"), {"rp"}, ("u32", big)) == f32(float((1 << 24) + 2))
    assert ev("cvt", ("f32", "s64"), {"rm"}, ("s64", -big)) == f32(-float((1 << 24) + 2))
    assert ev("cvt", ("f32", "f32"), {"rni"}, ("f32", 2.5)) == f32(2.0)


# ------------------------------------------------------------------ integers
def test_shifts_clamp_large_amounts():
    assert s32(ev("shr", "s32", (), ("s32", -8), ("u32", 40))) == -1
    assert ev("shr", "u32", (), ("u32", 0x80000000), ("u32", 40)) == 0
    assert ev("shl", "b32", (), ("b32", 1), ("u32", 32)) == 0
    assert ev("shl", "b32", (), ("b32", 1), ("u32", 31)) == 0x80000000
    assert ev("shl", "b16", (), ("b16", 1), ("u32", 0x10000)) == 0


def test_mul_hi_and_wide():
    assert ev("mul", "u32", {"hi"}, ("u32", 0xFFFFFFFF), ("u32", 0xFFFFFFFF)) == 0xFFFFFFFE
    assert ev("mul", "s32", {"hi"}, ("s32", -1), ("s32", -1)) == 0
    assert ev("mul", "s32", {"wide"}, ("s32", -2), ("s32", 3)) == (-6) & (2**64 - 1)
    assert ev("mul", "u64", {"hi"}, ("u64", 2**64 - 1), ("u64", 2**64 - 1)) == 2**64 - 2
    assert ev("mul", "s64", {"hi"}, ("s64", -1), ("s64", 2**63 - 1)) == 2**64 - 1
    assert ev("mul24", "s32", {"hi"}, ("s32", 0x800000), ("s32", 0x800000)) == 1 << 30  # (-2^23)^2 = 2^46, bits 47..16


def test_division_by_zero_follows_the_documented_choice():
    assert ev("div", "u32", (), ("u32", 7), ("u32", 0)) == 0xFFFFFFFF
    assert s32(ev("div", "s32", (), ("s32", 7), ("s32", 0))) == -1
    assert s32(ev("div", "s32", (), ("s32", -7), ("s32", 2))) == -3
    assert s32(ev("rem", "s32", (), ("s32", -7), ("s32", 2))) == -1
    assert ev("rem", "u32", (), ("u32", 7), ("u32", 0)) == 7


def test_saturating_add_and_carry():
    assert ev("add", "s32", {"sat"}, ("s32", 0x7FFFFFFF), ("s32", 1)) == 0x7FFFFFFF
    assert ev("sub", "s32", {"sat"}, ("s32", -(2**31)), ("s32", 1)) == 0x80000000
    assert ev("add", "u32", {"cc"}, ("u32", 0xFFFFFFFF), ("u32", 1)) == (0, True)
    assert ev("addc", "u32", {"cc"}, ("u32", 0xFFFFFFFF), ("u32", 0), ("pred", True)) == (0, True)
    assert ev("subc", "u32", {"cc"}, ("u32", 0), ("u32", 0), ("pred", True)) == (0xFFFFFFFF, True)


def test_extended_precision_carry_chains():
    """§9.7.2: add.cc/sub.cc/mad.cc write CC.CF (sub: the borrow); addc/subc/madc read it."""
    m64 = 2**64 - 1
    assert ev("add", "u32", {"cc"}, ("u32", 0xFFFFFFFF), ("u32", 0)) == (0xFFFFFFFF, False)
    assert ev("add", "s64", {"cc"}, ("s64", m64), ("s64", 1)) == (0, True)  # nvcc's __int128 form
    assert ev("addc", "u32", (), ("u32", 5), ("u32", 6), ("pred", True)) == 12
    assert ev("addc", "u32", {"cc"}, ("u32", 0xFFFFFFFF), ("u32", 0xFFFFFFFF), ("pred", True)) == (0xFFFFFFFF, True)
    assert ev("addc", "s64", {"cc"}, ("s64", m64), ("s64", 0), ("pred", False)) == (m64, False)
    assert ev("sub", "u32", {"cc"}, ("u32", 3), ("u32", 5)) == (0xFFFFFFFE, True)
    assert ev("sub", "u64", {"cc"}, ("u64", 5), ("u64", 5)) == (0, False)
    assert ev("subc", "u32", (), ("u32", 10), ("u32", 3), ("pred", True)) == 6
    assert ev("subc", "u32", {"cc"}, ("u32", 5), ("u32", 5), ("pred", False)) == (0, False)
    assert ev("subc", "s64", {"cc"}, ("s64", 0), ("s64", m64), ("pred", True)) == (0, True)
    # mad{.lo,.hi}.cc: the low or high half of the product plus c, the carry of that addition
    assert ev("mad", "u32", {"lo", "cc"}, ("u32", 0x10000), ("u32", 0x10000), ("u32", 7)) == (7, False)
    assert ev("mad", "u32", {"lo", "cc"}, ("u32", 0xFFFFFFFF), ("u32", 1), ("u32", 1)) == (0, True)
    assert ev("mad", "u32", {"hi", "cc"}, ("u32", 0xFFFFFFFF), ("u32", 0xFFFFFFFF), ("u32", 2)) == (0, True)
    assert ev("mad", "s32", {"hi", "cc"}, ("s32", -1), ("s32", 1), ("s32", 1)) == (0, True)  # hi(-1) = -1
    assert ev("madc", "u32", {"hi"}, ("u32", 0xFFFFFFFF), ("u32", 0xFFFFFFFF), ("u32", 0), ("pred", True)) \
        == 0xFFFFFFFF
    assert ev("madc", "u32", {"lo", "cc"}, ("u32", 3), ("u32", 5), ("u32", 0xFFFFFFF0), ("pred", True)) == (0, True)
    assert ev("madc", "u32", {"lo", "cc"}, ("u32", 3), ("u32", 5), ("u32", 0xFFFFFFF0), ("pred", False)) \
        == (0xFFFFFFFF, False)
    assert ev("madc", "u64", {"hi", "cc"}, ("u64", m64), ("u64", 2), ("u64", m64), ("pred", True)) == (1, True)


def test_bit_manipulation():
    assert ev("brev", "b32", (), ("b32", 1)) == 0x80000000
    assert ev("popc", "b64", (), ("b64", 2**64 - 1)) == 64
    assert ev("clz", "b32", (), ("b32", 0)) == 32
    assert ev("clz", "b32", (), ("b32", 1)) == 31
    assert ev("clz", "b64", (), ("b64", 1 << 40)) == 23
    assert s32(ev("bfe", "s32", (), ("s32", 0xF0), ("u32", 4), ("u32", 4))) == -1
    assert ev("bfe", "u32", (), ("u32", 0xF0), ("u32", 4), ("u32", 4)) == 0xF
    assert ev("bfe", "s32", (), ("s32", 0xF0), ("u32", 4), ("u32", 0)) == 0
    assert ev("bfe", "s32", (), ("s32", 0x80000000), ("u32", 40), ("u32", 3)) == 0xFFFFFFFF
    assert ev("bfi", "b32", (), ("b32", 0xF), ("b32", 0), ("u32", 8), ("u32", 4)) == 0xF00
    assert ev("bfi", "b32", (), ("b32", 0xFF), ("b32", 0), ("u32", 28), ("u32", 8)) == 0xF0000000


def test_prmt_default_mode():
    a, b = ("b32", 0x33221100), ("b32", 0x77665544)
    assert ev("prmt", "b32", (), a, b, ("b32", 0x5140)) == 0x55114400
    assert ev("prmt", "b32", (), ("b32", 0x80), b, ("b32", 0x0008)) == 0x808080FF


def test_lop3_truth_tables():
    a, b, c = ("b32", 0x12345678), ("b32", 0x0F0F0F0F), ("b32", 0xFF00FF00)
    assert ev("lop3", "b32", (), a, b, c, ("imm", 0xF0)) == 0x12345678
    assert ev("lop3", "b32", (), a, b, c, ("imm", 0x96)) == 0x12345678 ^ 0x0F0F0F0F ^ 0xFF00FF00
    assert ev("lop3", "b32", (), a, b, c, ("imm", 0x80)) == 0x12345678 & 0x0F0F0F0F & 0xFF00FF00


def test_funnel_shift():
    lo, hi = ("b32", 0x80000000), ("b32", 0x1)
    assert ev("shf", "b32", {"l", "wrap"}, lo, hi, ("u32", 1)) == 0x3
    assert ev("shf", "b32", {"l", "wrap"}, lo, hi, ("u32", 33)) == 0x3
    assert ev("shf", "b32", {"r", "clamp"}, lo, hi, ("u32", 40)) == 0x1
    assert ev("shf", "b32", {"r", "wrap"}, lo, hi, ("u32", 31)) == 0x3


# ------------------------------------------------------------------ comparison
def test_setp_unordered_with_nan():
    nan, one = ("f32", math.nan), ("f32", 1.0)
    assert ev("setp", "f32", {"ltu"}, nan, one) == (True, False)
    assert ev("setp", "f32", {"lt"}, nan, one) == (False, True)
    assert ev("setp", "f32", {"ne"}, nan, one)[0] is False
    assert ev("setp", "f32", {"neu"}, nan, one)[0] is True
    assert ev("setp", "f32", {"nan"}, one, nan)[0] is True
    assert ev("setp", "f32", {"eq"}, ("f32", 0.0), ("f32", -0.0))[0] is True
    assert ev("setp", "s32", {"lt", "and"}, ("s32", -1), ("s32", 0), ("pred", False)) == (False, False)
    assert ev("setp", "u32", {"lt"}, ("u32", 0xFFFFFFFF), ("u32", 0))[0] is False


def test_setp_packed_halves_give_p_for_the_lower_and_q_for_the_upper_half():
    # f16x2 a = {hi 1.0, lo 2.0}, b = {hi 2.0, lo 1.0}: lo 2.0 < 1.0 false, hi 1.0 < 2.0 true
    a, b = ("b32", 0x3C004000), ("b32", 0x40003C00)
    assert ev("setp", "f16x2", {"lt"}, a, b) == (False, True)
    assert ev("setp", "f16x2", {"lt", "or"}, a, b, ("pred", True)) == (True, True)
    # bf16x2 NaN (0x7FC0) in the lower half only
    assert ev("setp", "bf16x2", {"nan"}, ("b32", 0x3F807FC0), ("b32", 0x3F803F80)) == (True, False)


def test_set_and_selection():
    assert ev("set", ("f32", "s32"), {"lt"}, ("s32", -1), ("s32", 0)) == f32(1.0)
    assert ev("set", ("u32", "f32"), {"gtu"}, ("f32", math.nan), ("f32", 0.0)) == 0xFFFFFFFF
    assert ev("selp", "b32", (), ("b32", 1), ("b32", 2), ("pred", False)) == 2
    assert ev("slct", ("b32", "f32"), (), ("b32", 1), ("b32", 2), ("f32", -0.0)) == 1
    assert ev("slct", ("b32", "f32"), (), ("b32", 1), ("b32", 2), ("f32", math.nan)) == 2
    assert ev("slct", ("b32", "s32"), (), ("b32", 1), ("b32", 2), ("s32", -3)) == 2
    assert ev("copysign", "f32", (), ("f32", -1.0), ("f32", 2.0)) == f32(-2.0)
    assert ev("mov", "b64", (), ("b32", 0x11111111), ("b32", 0x22222222)) == 0x2222222211111111


# ------------------------------------------------------------------ approximate
def test_approximate_families_are_uninterpreted_symbolically():
    x = z3.BitVec("x", 32)
    for fam, mods in [("rsqrt", {"approx"}), ("rcp", {"approx"}), ("ex2", {"approx"}), ("sin", {"approx"}),
                      ("lg2", {"approx"}), ("cos", {"approx"}), ("tanh", {"approx"}), ("sqrt", {"approx"})]:
        assert is_approximate(fam, mods)
        t = evaluate(Z, fam, "f32", mods, x)
        assert t.decl().name() == f"approx_{fam}_f32"
    t = evaluate(Z, "div", "f32", {"full"}, x, x)
    assert t.decl().name() == "approx_div_full_f32"
    # the same argument gives the same (unknown) value: the UF is a function
    s = z3.Solver()
    s.add(evaluate(Z, "ex2", "f32", {"approx"}, x) != evaluate(Z, "ex2", "f32", {"approx"}, x))
    assert s.check() == z3.unsat


def test_approximate_concrete_values_are_close():
    def one(fam, v, mods=("approx",)):
        r = evaluate(C, fam, "f32", mods, np.array([f32(v)], dtype=np.uint64))
        return bits_to_float("f32", int(r[0]))

    assert one("ex2", 3.0) == 8.0
    assert one("lg2", 8.0) == 3.0
    assert abs(one("rsqrt", 4.0) - 0.5) < 1e-7
    assert one("rcp", 0.0) == math.inf
    assert abs(one("sin", 1.0) - math.sin(1.0)) < 1e-6
    assert abs(one("tanh", 0.5) - math.tanh(0.5)) < 1e-6


def test_every_family_is_registered_once():
    assert len(FAMILIES) == len(set(FAMILIES.values()))
    for name in ("add", "mul", "mad", "fma", "cvt", "setp", "prmt", "lop3", "shf", "testp", "copysign"):
        assert name in FAMILIES


def test_concrete_is_vectorized_over_lanes():
    a = np.array([1, 2, 3, 0xFFFFFFFF], dtype=np.uint64)
    r = evaluate(C, "add", "u32", (), a, np.uint64(1))
    assert r.tolist() == [2, 3, 4, 0]
    p, q = evaluate(C, "setp", "u32", {"lt"}, a, np.array(3, dtype=np.uint64))
    assert p.tolist() == [True, True, False, False] and q.tolist() == [False, False, True, True]


def test_shfl_source_lane_is_the_same_rule_for_numpy_lanes_and_single_lanes():
    import numpy as np

    from kverify.semantics.values.collectives import shfl_source

    lanes = np.arange(32)
    for mode in ("up", "down", "bfly", "idx"):
        for b in (0, 1, 5, 17, 31):
            for c in (0x1F, 0x0, 0x1C1F, 0x181F, 3):
                j, ok = shfl_source(mode, lanes, b, c)
                assert [shfl_source(mode, int(l), b, c) for l in lanes] == list(zip(j.tolist(), ok.tolist()))
    # __shfl_down_sync(x, 1) in a full warp: lane 31 keeps its own value
    j, ok = shfl_source("down", lanes, 1, 0x1F)
    assert j[30] == 31 and j[31] == 31 and not ok[31]
    # width-8 segments (c = 0x181F... for xor within 8 lanes): bfly 4 stays in the segment
    j, _ = shfl_source("bfly", lanes, 4, 0x181F)
    assert j[3] == 7 and j[12] == 8


@pytest.mark.parametrize("a,want", [
    (0x3F800000, 0x3F800000), (0x3F800FFF, 0x3F800000), (0x3F801000, 0x3F802000),  # a tie rounds away
    (0xBF801000, 0xBF802000), (0x3F803000, 0x3F804000), (0x00001000, 0x00002000),  # subnormal
    (0x7F7FF000, 0x7F800000), (0xFF7FEFFF, 0xFF7FE000),  # to an infinity, and just below
    (0x7F800000, 0x7F800000), (0x7FC00001, 0x7FC00000), (0x7F800001, 0x7F800000),  # a NaN's low bits cleared
])
def test_cvt_rna_tf32_rounds_the_magnitude_bits_ties_away_as_the_sm90_expansion(a, want):
    assert ev("cvt", ("tf32", "f32"), {"rna"}, ("b32", a)) == want


def test_dp4a_and_dp2a_sum_the_extended_byte_products():
    """dp4a / dp2a (§Integer Arithmetic): bytes (and a's halves for dp2a) sign- or zero-extended per
    the operand's type, products summed onto c modulo 2^32."""
    a = np.array([0x80FF0102], np.uint64)  # bytes 0x02, 0x01, 0xFF, 0x80; halves 0x0102, 0x80FF
    b = np.array([0x02FF7F03], np.uint64)  # bytes 0x03, 0x7F, 0xFF, 0x02
    c = np.array([10], np.uint64)
    D = ConcreteDomain()

    def dp(fam, ty, mods=()):
        return int(evaluate(D, fam, ty, frozenset(mods), a, b, c)[0])

    # s32.s32: 2*3 + 1*127 + (-1)(-1) + (-128)*2 = 6 + 127 + 1 - 256, plus 10
    assert dp("dp4a", ("s32", "s32")) == (10 + 6 + 127 + 1 - 256) & 0xFFFFFFFF
    # u32.u32: 2*3 + 1*127 + 255*255 + 128*2
    assert dp("dp4a", ("u32", "u32")) == 10 + 6 + 127 + 255 * 255 + 256
    # s32.u32: a signed, b unsigned: 6 + 127 + (-1)*255 + (-128)*2
    assert dp("dp4a", ("s32", "u32")) == (10 + 6 + 127 - 255 - 256) & 0xFFFFFFFF
    # dp2a.lo.s32.s32: 0x0102 * 3 + (0x80FF - 0x10000) * 127
    assert dp("dp2a", ("s32", "s32"), ["lo"]) == (10 + 0x0102 * 3 + (0x80FF - 0x10000) * 127) & 0xFFFFFFFF
    # dp2a.hi.u32.s32: 0x0102 * (-1) + 0x80FF * 2
    assert dp("dp2a", ("u32", "s32"), ["hi"]) == (10 - 0x0102 + 0x80FF * 2) & 0xFFFFFFFF


def test_quiet_enters_numpy_error_state_once_and_restores_it():
    """``quiet()`` blocks nest: numpy ignores lane overflow inside any of them, the domain's
    methods enter no block of their own inside one (and one of their own outside), and the
    caller's error state is back after the outermost."""
    import warnings

    from kverify.semantics.values.concrete import quiet

    before = np.geterr()
    with np.errstate(all="raise"):
        with quiet():
            with quiet():
                assert np.geterr()["over"] == "ignore"
                np.array([1e308]) * 10  # would raise under the caller's state
            assert np.geterr()["over"] == "ignore"
        assert np.geterr()["over"] == "raise"
        big = np.array([float_to_bits("f64", 1e308)], np.uint64)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = C.fmul("f64", "rn", big, big)  # outside a block: the method enters its own
        assert bits_to_float("f64", int(got[0])) == math.inf
    assert np.geterr() == before

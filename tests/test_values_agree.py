"""The concrete (numpy) and symbolic (z3) domains agree bit for bit on every family.

Each case evaluates one instruction form on random operand bit patterns (mixed with IEEE
special values, subnormals, values close together, and integer edge values) in both
domains; the z3 term is built once over variables, then the operands are substituted and
the term simplified to a constant.  No NaN canonicalisation is needed here: both domains
return the format's canonical NaN for every arithmetic NaN result (docs/values.md).
Approximate families are uninterpreted symbolically and are covered in test_values_known.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kverify.semantics.values import FORMATS, Z3Domain, ConcreteDomain, bits, evaluate, is_float

C = ConcreteDomain()
Z = Z3Domain()
LANES = 8
SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)

# ------------------------------------------------------------------ operand strategies
INT_TYPES = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")


@functools.lru_cache(maxsize=None)
def int_values(w):
    top = (1 << w) - 1
    sb = 1 << (w - 1)
    edges = sorted(v for v in {0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 300, top, top - 1, sb, sb - 1, sb + 1} if v <= top)
    return st.one_of(st.sampled_from(edges), st.integers(0, top), st.integers(0, 70))


@functools.lru_cache(maxsize=None)
def float_values(fmt):
    F = FORMATS[fmt]
    w = F.width
    specials = [
        0, F.sign_bit, F.exp_mask, F.exp_mask | F.sign_bit, F.canonical_nan, F.exp_mask | 1,
        F.sign_bit | F.exp_mask | (1 << (F.mbits - 1)), 1, F.sign_bit | 1, F.min_normal - 1,
        F.min_normal, F.sign_bit | F.min_normal, F.max_finite, F.sign_bit | F.max_finite,
        F.one, F.one | F.sign_bit, F.one + 1, F.one - 1, F.one >> 1, (F.bias + 1) << F.mbits,
        ((F.bias + 1) << F.mbits) | (1 << (F.mbits - 1)),
    ]
    # moderate exponents: sums/products round, ties appear
    near = st.builds(
        lambda s, e, m: (s << (w - 1)) | (e << F.mbits) | m,
        st.integers(0, 1),
        st.integers(F.bias - 4, F.bias + 4),
        st.one_of(st.integers(0, (1 << F.mbits) - 1), st.sampled_from([0, 1, (1 << F.mbits) - 1, 1 << (F.mbits - 1)])),
    )
    # near the subnormal boundary and near overflow
    tiny = st.builds(lambda s, m: (s << (w - 1)) | m, st.integers(0, 1), st.integers(0, 4 << F.mbits))
    huge = st.builds(lambda s, m: (s << (w - 1)) | (F.exp_mask - 1 - m), st.integers(0, 1), st.integers(0, 2 << F.mbits))
    # low mantissa bits shaped like a rounding tie / just below / just above at any precision
    def shaped(s, e, hi, k, kind):
        k = 1 + k % F.mbits
        low = [1 << (k - 1), (1 << (k - 1)) - 1, (1 << (k - 1)) + 1, 0][kind]
        m = ((hi << k) | low) & ((1 << F.mbits) - 1)
        return (s << (w - 1)) | (e << F.mbits) | m

    ties = st.builds(
        shaped, st.integers(0, 1), st.integers(1, (1 << F.ebits) - 2), st.integers(0, (1 << F.mbits) - 1),
        st.integers(0, 64), st.integers(0, 3),
    )
    return st.one_of(st.sampled_from(specials), st.integers(0, (1 << w) - 1), near, near, tiny, huge, ties, ties)


@functools.lru_cache(maxsize=None)
def float_ints(fmt):
    """Floats holding (near-)integral values, around the integer conversion bounds too."""
    F = FORMATS[fmt]

    def mk(s, e, m):
        e = min(e, F.emax)
        return (s << (F.width - 1)) | ((e + F.bias) << F.mbits) | m

    return st.builds(
        mk,
        st.integers(0, 1),
        st.integers(-2, 66),
        st.one_of(st.integers(0, (1 << F.mbits) - 1), st.sampled_from([0, 1 << (F.mbits - 1), 1 << (F.mbits - 2)])),
    )


@functools.lru_cache(maxsize=None)
def packed(fmt):
    return st.builds(lambda lo, hi: lo | (hi << 16), float_values(fmt), float_values(fmt))


def strategy(spec):
    if isinstance(spec, tuple):
        return spec[1]
    return _strategy(spec)


@functools.lru_cache(maxsize=None)
def _strategy(spec):
    if isinstance(spec, tuple):  # ("imm", strategy) / ("mix", ...)
        return spec[1]
    if spec == "pred":
        return st.booleans()
    if spec in ("f16x2", "bf16x2"):
        return packed(spec[:-2])
    if spec.startswith("fi:"):
        fmt = spec[3:]
        return st.one_of(float_values(fmt), float_ints(fmt))
    if is_float(spec):
        return float_values(spec)
    return int_values(bits(spec))


def sym_var(spec, i):
    if isinstance(spec, tuple):
        return None
    if spec == "pred":
        return z3.Bool(f"p{i}")
    if spec.startswith("fi:"):
        spec = spec[3:]
    return z3.BitVec(f"v{i}", bits(spec))


def width_of(spec):
    return 1 if spec == "pred" else bits(spec[3:] if spec.startswith("fi:") else spec)


# ------------------------------------------------------------------ cases
_FIRST = set()  # (family, modifiers) with a case in the fast subset already


def case(fam, ty, mods, *args):
    """One agreement case; the first of each family and modifier set runs in the fast subset
    (``-m "not slow"``), its other types in the full suite."""
    mods = frozenset(mods)
    tys = ty if isinstance(ty, str) else ".".join(ty)
    first = (fam, mods) not in _FIRST
    _FIRST.add((fam, mods))
    return pytest.param(fam, ty, mods, args, id=f"{fam}.{'.'.join(sorted(mods))}.{tys}".replace("..", "."),
                        marks=() if first else pytest.mark.slow)


CASES = []
# integer arithmetic
for t in ("u16", "u32", "u64", "s16", "s32", "s64"):
    CASES += [
        case("add", t, (), t, t), case("sub", t, (), t, t), case("mul", t, ["lo"], t, t),
        case("mul", t, ["hi"], t, t), case("div", t, (), t, t), case("rem", t, (), t, t),
        case("min", t, (), t, t), case("max", t, (), t, t), case("mad", t, ["lo"], t, t, t),
        case("mad", t, ["hi"], t, t, t),
    ]
for t in ("s16", "s32", "s64"):
    CASES += [case("abs", t, (), t), case("neg", t, ())]
    CASES[-1] = case("neg", t, (), t)
for t, t2 in (("u16", "u32"), ("u32", "u64"), ("s16", "s32"), ("s32", "s64")):
    CASES += [case("mul", t, ["wide"], t, t), case("mad", t, ["wide"], t, t, t2)]
CASES += [
    case("add", "s32", ["sat"], "s32", "s32"), case("sub", "s32", ["sat"], "s32", "s32"),
    case("add", "u32", ["cc"], "u32", "u32"), case("sub", "u32", ["cc"], "u32", "u32"),
    case("addc", "u32", ["cc"], "u32", "u32", "pred"), case("subc", "u32", ["cc"], "u32", "u32", "pred"),
    case("add", "u64", ["cc"], "u64", "u64"), case("addc", "u64", ["cc"], "u64", "u64", "pred"),
    case("addc", "u32", (), "u32", "u32", "pred"), case("subc", "s64", ["cc"], "s64", "s64", "pred"),
    case("sub", "s64", ["cc"], "s64", "s64"), case("mad", "u32", ["lo", "cc"], "u32", "u32", "u32"),
    case("mad", "s32", ["hi", "cc"], "s32", "s32", "s32"), case("mad", "u64", ["hi", "cc"], "u64", "u64", "u64"),
    case("madc", "u32", ["lo", "cc"], "u32", "u32", "u32", "pred"),
    case("madc", "s32", ["hi"], "s32", "s32", "s32", "pred"),
    case("madc", "u64", ["hi", "cc"], "u64", "u64", "u64", "pred"),
    case("mad", "s32", ["hi", "sat"], "s32", "s32", "s32"), case("max", "s32", ["relu"], "s32", "s32"),
]
for t in ("u32", "s32"):
    CASES += [
        case("mul24", t, ["lo"], t, t), case("mul24", t, ["hi"], t, t),
        case("mad24", t, ["lo"], t, t, t), case("mad24", t, ["hi"], t, t, t),
    ]
CASES += [case("mad24", "s32", ["hi", "sat"], "s32", "s32", "s32")]

# logic and shift
for t in ("b16", "b32", "b64", "pred"):
    CASES += [case(f, t, (), t, t) for f in ("and", "or", "xor")] + [case("not", t, (), t)]
for t in ("b16", "b32", "b64"):
    CASES += [case("cnot", t, (), t)]
for t in ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"):
    CASES += [case("shl", t, (), t, "u32")] if t[0] == "b" else []
    CASES += [case("shr", t, (), t, "u32")]
for t in ("u32", "u64", "s32", "s64"):
    CASES += [case("bfe", t, (), t, "u32", "u32")]
for t in ("b32", "b64"):
    CASES += [
        case("bfi", t, (), t, t, "u32", "u32"), case("brev", t, (), t),
        case("popc", t, (), t), case("clz", t, (), t),
    ]
CASES += [
    case("prmt", "b32", (), "b32", "b32", "b32"),
    case("lop3", "b32", (), "b32", "b32", "b32", ("imm", st.integers(0, 255))),
]
for d in ("l", "r"):
    for m in ("wrap", "clamp"):
        CASES += [case("shf", "b32", [d, m], "b32", "b32", "u32")]

# comparison and selection
for t in ("u16", "u32", "s32", "s64", "u64", "b32"):
    ops_ = ("eq", "ne") if t[0] == "b" else ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
    for o in ops_:
        CASES += [case("setp", t, [o], t, t)]
    CASES += [case("setp", t, ["ne", "xor"], t, t, "pred")]
FCMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
for t in ("f16", "bf16", "f32", "f64"):
    for o in FCMP:
        CASES += [case("setp", t, [o], t, t)]
    CASES += [case("setp", t, ["lt", "and"], t, t, "pred"), case("setp", t, ["geu", "or"], t, t, "pred")]
CASES += [
    case("setp", "f32", ["le", "ftz"], "f32", "f32"),
    case("set", ("u32", "f32"), ["ltu"], "f32", "f32"), case("set", ("f32", "s32"), ["gt"], "s32", "s32"),
    case("set", ("s32", "u16"), ["hi", "and"], "u16", "u16", "pred"),
    case("selp", "b32", (), "b32", "b32", "pred"), case("selp", "f64", (), "f64", "f64", "pred"),
    case("slct", ("b32", "s32"), (), "b32", "b32", "s32"), case("slct", ("f32", "f32"), (), "f32", "f32", "f32"),
    case("slct", ("u64", "f32"), ["ftz"], "u64", "u64", "f32"),
    case("mov", "b32", (), "b32"), case("mov", "b64", (), "b32", "b32"), case("mov", "b32", (), "b16", "b16"),
]

# floating point
for t in ("f16", "bf16", "f32", "f64"):
    for rm in ("rn", "rz", "rm", "rp"):
        CASES += [
            case("add", t, [rm], t, t), case("sub", t, [rm], t, t), case("mul", t, [rm], t, t),
            case("fma", t, [rm], t, t, t),
        ]
    for f in ("abs", "neg"):
        CASES += [case(f, t, (), t)]
    for f in ("min", "max"):
        CASES += [case(f, t, (), t, t), case(f, t, ["NaN"], t, t)]
for t in ("f32", "f64"):
    for rm in ("rn", "rz", "rm", "rp"):
        CASES += [case("div", t, [rm], t, t), case("sqrt", t, [rm], t), case("rcp", t, [rm], t)]
    CASES += [case("copysign", t, (), t, t), case("mad", t, ["rn"], t, t, t)]
    for o in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
        CASES += [case("testp", t, [o], t)]
CASES += [
    case("add", "f32", ["rn", "ftz"], "f32", "f32"), case("mul", "f32", ["rz", "ftz", "sat"], "f32", "f32"),
    case("fma", "f32", ["rn", "ftz", "sat"], "f32", "f32", "f32"), case("add", "f32", ["sat"], "f32", "f32"),
    case("div", "f32", ["rn", "ftz"], "f32", "f32"), case("sqrt", "f32", ["rn", "ftz"], "f32"),
    case("min", "f32", ["ftz"], "f32", "f32"), case("max", "f32", ["ftz", "NaN"], "f32", "f32"),
    case("neg", "f32", ["ftz"], "f32"), case("abs", "f32", ["ftz"], "f32"),
    case("add", "f16", ["ftz"], "f16", "f16"), case("fma", "f16", ["rn", "sat"], "f16", "f16", "f16"),
    case("fma", "f16", ["rn", "relu"], "f16", "f16", "f16"), case("max", "bf16", ["relu"], "bf16", "bf16"),
]
for t in ("f16x2", "bf16x2"):
    CASES += [
        case("add", t, ["rn"], t, t), case("mul", t, ["rn"], t, t), case("fma", t, ["rn"], t, t, t),
        case("fma", t, ["rn", "relu"], t, t, t), case("min", t, (), t, t), case("neg", t, (), t),
        case("abs", t, (), t), case("sub", t, ["rn"], t, t),
    ]

# integer dot products (a pair of types, like cvt's)
for ta in ("u32", "s32"):
    for tb in ("u32", "s32"):
        CASES += [case("dp4a", (ta, tb), (), "u32", "u32", "u32")]
        CASES += [case("dp2a", (ta, tb), [m], "u32", "u32", "u32") for m in ("lo", "hi")]

# conversions
for d in INT_TYPES:
    for s in INT_TYPES:
        if d != s:
            CASES += [case("cvt", (d, s), (), s), case("cvt", (d, s), ["sat"], s)]
for f in ("f16", "bf16", "f32", "f64"):
    for i in ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"):
        for r in ("rni", "rzi", "rmi", "rpi"):
            CASES += [case("cvt", (i, f), [r], "fi:" + f)]
    for i in ("u16", "s16", "u32", "s32", "u64", "s64"):
        for r in ("rn", "rz", "rm", "rp"):
            CASES += [case("cvt", (f, i), [r], i)]
    for r in ("rni", "rzi", "rmi", "rpi"):
        CASES += [case("cvt", (f, f), [r], "fi:" + f)]
    for g in ("f16", "bf16", "f32", "f64"):
        if g != f:
            for r in ("rn", "rz", "rm", "rp"):
                CASES += [case("cvt", (g, f), [r], f)]
CASES += [
    case("cvt", ("s32", "f32"), ["rpi", "ftz"], "f32"), case("cvt", ("f32", "f32"), ["ftz"], "f32"),
    case("cvt", ("f32", "f32"), ["sat"], "f32"), case("cvt", ("f32", "f64"), ["rn", "ftz", "sat"], "f64"),
    case("cvt", ("f32", "f16"), ["ftz"], "f16"), case("cvt", ("f32", "s32"), ["rn", "sat"], "s32"),
    case("cvt", ("f16x2", "f32"), ["rn"], "f32", "f32"), case("cvt", ("bf16x2", "f32"), ["rn"], "f32", "f32"),
    case("cvt", ("f16x2", "f32"), ["rn", "relu"], "f32", "f32"),
    case("cvt", ("bf16", "f32"), ["rn", "satfinite"], "f32"), case("cvt", ("f16", "f32"), ["rz", "satfinite"], "f32"),
]

_TERMS: dict = {}


def _term(fam, ty, mods, specs, imms):
    key = (fam, ty, mods, specs, tuple(imms))
    if key not in _TERMS:
        vs, it = [], iter(imms)
        for i, s in enumerate(specs):
            vs.append(next(it) if isinstance(s, tuple) else sym_var(s, i))
        r = evaluate(Z, fam, ty, mods, *vs)
        _TERMS[key] = ([v for v in vs if not isinstance(v, int)], r if isinstance(r, tuple) else (r,))
    return _TERMS[key]


def _z3_value(t):
    v = z3.simplify(t)
    if z3.is_bv_value(v):
        return v.as_long()
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    s = z3.Solver()
    r = z3.FreshConst(t.sort())
    s.add(r == t)
    assert s.check() == z3.sat
    m = s.model()[r]
    return m.as_long() if z3.is_bv_value(m) else bool(z3.is_true(m))


@pytest.mark.parametrize("fam,ty,mods,specs", CASES)
@SETTINGS
@given(data=st.data())
def test_concrete_and_symbolic_agree(fam, ty, mods, specs, data):
    imms = [data.draw(s[1]) for s in specs if isinstance(s, tuple)]
    lanes = [[data.draw(strategy(s)) for _ in range(LANES)] for s in specs if not isinstance(s, tuple)]
    cargs, li, ii = [], iter(lanes), iter(imms)
    for s in specs:
        if isinstance(s, tuple):
            cargs.append(next(ii))
        elif s == "pred":
            cargs.append(np.array(next(li), dtype=bool))
        else:
            cargs.append(np.array(next(li), dtype=np.uint64))
    got = evaluate(C, fam, ty, mods, *cargs)
    got = got if isinstance(got, tuple) else (got,)
    vars_, terms = _term(fam, ty, mods, specs, imms)
    sym_specs = [s for s in specs if not isinstance(s, tuple)]
    for lane in range(LANES):
        subs = []
        for v, s, vals in zip(vars_, sym_specs, lanes):
            x = vals[lane]
            subs.append((v, z3.BoolVal(x) if s == "pred" else z3.BitVecVal(x, width_of(s))))
        for k, t in enumerate(terms):
            want = _z3_value(z3.substitute(t, *subs))
            have = got[k][lane]
            have = bool(have) if isinstance(want, bool) else int(have)
            assert have == want, (
                f"{fam} {ty} {sorted(mods)} result {k} lane {lane}: operands "
                f"{[hex(v[lane]) if not isinstance(v[lane], bool) else v[lane] for v in lanes]} imm {imms}: "
                f"concrete {have:#x} != symbolic {want:#x}" if not isinstance(want, bool) else
                f"{fam} {ty} {sorted(mods)} lane {lane}: {[v[lane] for v in lanes]}: {have} != {want}"
            )

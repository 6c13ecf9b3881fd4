"""Value semantics of the PTX scalar instructions, written once over a domain ``D``.

Owns: what each instruction family computes from its operands' bit patterns.  Every
function here is ``family(D, ty, mods, *operands)`` and uses only the primitive vocabulary
of the domain (:class:`~semantics.values.concrete.ConcreteDomain` for numpy lanes,
:class:`~semantics.values.symbolic.Z3Domain` for z3 terms), so the interpreter and the SMT
checkers share one definition.

Conventions
  * ``ty`` is a PTX type name; two-type instructions (cvt, set, slct) take a pair
    ``(dtype, stype)`` in PTX order (destination first).
  * ``mods`` is a frozenset of modifier names without the dot: ``{"rz", "ftz", "sat"}``,
    ``{"hi"}``, ``{"wide"}``, ``{"lt", "and"}``, ``{"l", "clamp"}``, ...
  * Operands are raw bit patterns of their PTX operand types (shift amounts, bfe/bfi
    positions and lengths, prmt selectors are 32-bit); predicates are booleans;
    immediates that select behaviour (lop3's immLut) are Python ints.
  * Multi-result instructions return tuples: ``setp`` -> ``(p, q)``; ``add/sub/mad`` with
    ``cc`` and ``addc/subc/madc`` with ``cc`` -> ``(d, carry_out)``; the carry-in of
    ``addc/subc/madc`` is their last operand, a predicate (CC.CF).
  * Float rounding defaults to ``rn`` when none is given (PTX: add/sub/mul/fma/div.rn
    is the default meaning).  Arithmetic NaN results are the canonical NaN of the format.

Sections cited are those of the PTX ISA (version 8.x), chapter "Instructions".
"""
from __future__ import annotations

from .types import FORMATS, bits, element, float_to_bits, is_float, is_packed, is_signed, mask

_RMODES = ("rn", "rz", "rm", "rp")
_IRMODES = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}


def _rm(mods, default="rn"):
    for m in _RMODES:
        if m in mods:
            return m
    return default


def _irm(mods):
    for m, r in _IRMODES.items():
        if m in mods:
            return r
    return None


def _lanewise(D, ty, fn, *args):
    """Apply ``fn(elem_ty, *args)`` to each 16-bit half of packed f16x2/bf16x2 operands."""
    if not is_packed(ty):
        return fn(ty, *args)
    e = element(ty)
    lo = fn(e, *[D.extract(a, 15, 0) for a in args])
    hi = fn(e, *[D.extract(a, 31, 16) for a in args])
    return D.concat(hi, lo, 16)


# ----------------------------------------------------------------- float bit helpers
def _fabs_bits(D, F, x):
    return D.and_(x, D.const(mask(F.width - 1), F.width))


def f_isnan(D, F, x):
    return D.ult(D.const(F.exp_mask, F.width), _fabs_bits(D, F, x))


def f_isinf(D, F, x):
    return D.eq(_fabs_bits(D, F, x), D.const(F.exp_mask, F.width))


def f_iszero(D, F, x):
    return D.eq(_fabs_bits(D, F, x), D.const(0, F.width))


def f_issub(D, F, x):
    m = _fabs_bits(D, F, x)
    return D.band(D.ult(m, D.const(F.min_normal, F.width)), D.bnot(D.eq(m, D.const(0, F.width))))


def f_signbit(D, F, x):
    return D.eq(D.extract(x, F.width - 1, F.width - 1), D.const(1, 1))


def f_ftz(D, F, x):
    """Flush a subnormal to the zero of the same sign (PTX .ftz)."""
    return D.ite(f_issub(D, F, x), D.and_(x, D.const(F.sign_bit, F.width)), x)


def f_canon(D, F, x):
    return D.ite(f_isnan(D, F, x), D.const(F.canonical_nan, F.width), x)


def f_sat(D, F, x):
    """PTX .sat on floats: clamp to [0.0, 1.0]; NaN -> +0.0; -0.0 -> +0.0."""
    one = D.const(F.one, F.width)
    zero = D.const(0, F.width)
    low = D.bor(f_isnan(D, F, x), f_signbit(D, F, x))
    return D.ite(low, zero, D.ite(D.flt(F.name, one, x), one, x))


def f_relu(D, F, x):
    """PTX .relu: negative results (and -0.0) become +0.0; NaN -> canonical NaN."""
    return D.ite(
        f_isnan(D, F, x),
        D.const(F.canonical_nan, F.width),
        D.ite(f_signbit(D, F, x), D.const(0, F.width), x),
    )


F64_DEFAULT_NAN = 0xFFF8000000000000  # the NaN an invalid f64 operation produces on sm_90


def f_quiet(D, F, x):
    """``x`` with the quiet bit set (a NaN keeps its sign and payload)."""
    return D.or_(x, D.const(1 << (F.mbits - 1), F.width))


def f64_nan(D, F, xs, r):
    """f64 NaN results as sm_90 hardware gives them (checked against an H200, see
    docs/validation.md): with a NaN operand, that operand made quiet (the first NaN operand
    in PTX order; with several, which one the hardware returns follows the SASS operand
    order ptxas picks); an invalid operation without NaN operands gives 0xFFF8000000000000.
    (f32 and narrower formats give the canonical NaN 0x7FFFFFFF / 0x7FFF.)"""
    out = D.ite(f_isnan(D, F, r), D.const(F64_DEFAULT_NAN, 64), r)
    for x in reversed(xs):
        out = D.ite(f_isnan(D, F, x), f_quiet(D, F, x), out)
    return out


def _farith(D, ty, mods, prim, *args):
    """Shared float pipeline: .ftz inputs, op with rounding mode, .ftz/.sat/.relu result."""
    rm = _rm(mods)

    def one(et, *xs):
        F = FORMATS[et]
        if "ftz" in mods:
            xs = [f_ftz(D, F, x) for x in xs]
        r = prim(et, rm, *xs)
        if et == "f64":
            r = f64_nan(D, F, xs, r)
        if "ftz" in mods:
            r = f_ftz(D, F, r)
        if "sat" in mods:
            r = f_sat(D, F, r)
        if "relu" in mods:
            r = f_relu(D, F, r)
        return r

    return _lanewise(D, ty, one, *args)


def _approx(D, ty, mods, name, *args):
    """Approximate instruction: ``D.approx`` (uninterpreted symbolically), .ftz around it."""

    def one(et, *xs):
        F = FORMATS[et]
        if "ftz" in mods:
            xs = [f_ftz(D, F, x) for x in xs]
        r = D.approx(name, et, *xs)
        if "ftz" in mods:
            r = f_ftz(D, F, r)
        if "sat" in mods:
            r = f_sat(D, F, r)
        return r

    return _lanewise(D, ty, one, *args)


# ----------------------------------------------------------------- integer helpers
def _neg_bool(D, x, w):
    return D.slt(x, D.const(0, w), w)


def _sat_signed(D, a, b, s, w, is_sub):
    """Saturate a two's-complement add/sub result ``s`` of ``a`` and ``b`` to [MIN, MAX]."""
    sa, sb, ss = _neg_bool(D, a, w), _neg_bool(D, b, w), _neg_bool(D, s, w)
    same = D.bxor(sa, sb) if is_sub else D.bnot(D.bxor(sa, sb))
    ovf = D.band(same, D.bxor(ss, sa))
    return D.ite(ovf, D.ite(sa, D.const(1 << (w - 1), w), D.const(mask(w - 1), w)), s)


def _amount(D, s, w):
    """A 32-bit unsigned shift amount as a w-bit amount, clamped so that >= w stays >= w."""
    if w == 32:
        return s
    if w > 32:
        return D.zext(s, 32, w)
    return D.ite(D.ult(s, D.const(w, 32)), D.extract(s, w - 1, 0), D.const(w, w))


def _bool_to_bv(D, c, w):
    return D.ite(c, D.const(1, w), D.const(0, w))


# ================================================================= arithmetic
def add(D, ty, mods, a, b):
    """add{.sat,.cc}.type / add{.rnd}{.ftz}{.sat}.f32 etc. -- §Integer Arithmetic: add,
    §Extended-Precision: add.cc, §Floating-Point: add, §Half Precision: add.
    .sat applies to s32 (clamp to MININT..MAXINT).  .cc returns (d, carry-out)."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fadd, a, b)
    w = bits(ty)
    s = D.add(a, b, w)
    if "sat" in mods:
        s = _sat_signed(D, a, b, s, w, False)
    if "cc" in mods:
        return s, D.ult(s, a)
    return s


def addc(D, ty, mods, a, b, cin):
    """addc{.cc}.type d, a, b: d = a + b + CC.CF -- §Extended-Precision Integer Arithmetic."""
    w = bits(ty)
    t = D.add(a, b, w)
    s = D.add(t, _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(t, a), D.ult(s, t))
    return s


def sub(D, ty, mods, a, b):
    """sub -- §Integer Arithmetic: sub, §Floating-Point: sub.  .cc returns (d, borrow-out)."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fsub, a, b)
    w = bits(ty)
    s = D.sub(a, b, w)
    if "sat" in mods:
        s = _sat_signed(D, a, b, s, w, True)
    if "cc" in mods:
        return s, D.ult(a, b)
    return s


def subc(D, ty, mods, a, b, cin):
    """subc{.cc}.type d, a, b: d = a - (b + CC.CF) -- §Extended-Precision Integer Arithmetic."""
    w = bits(ty)
    s = D.sub(D.sub(a, b, w), _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(a, b), D.band(D.eq(a, b), cin))
    return s


def mul(D, ty, mods, a, b):
    """mul{.hi,.lo,.wide}.type -- §Integer Arithmetic: mul (.wide doubles the width and is
    defined for 16/32-bit types; .hi is the upper half of the 2w-bit product);
    §Floating-Point: mul."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fmul, a, b)
    w = bits(ty)
    sg = is_signed(ty)
    if "wide" in mods:
        ext = D.sext if sg else D.zext
        return D.mul(ext(a, w, 2 * w), ext(b, w, 2 * w), 2 * w)
    if "hi" in mods:
        return D.mulhi(a, b, w, sg)
    return D.mul(a, b, w)


def mad(D, ty, mods, a, b, c):
    """mad{.hi,.lo,.wide}{.sat}.type -- §Integer Arithmetic: mad (.sat only for .hi.s32:
    the add is saturating); float mad{.rnd} is fma (§Floating-Point: mad)."""
    if is_float(ty):
        return fma(D, ty, mods, a, b, c)
    w = bits(ty)
    if "wide" in mods:
        return D.add(mul(D, ty, mods, a, b), c, 2 * w)
    p = mul(D, ty, mods, a, b)
    s = D.add(p, c, w)
    if "sat" in mods:
        s = _sat_signed(D, p, c, s, w, False)
    if "cc" in mods:  # mad{.hi,.lo}.cc: the carry-out of the addition (§Extended-Precision: mad.cc)
        return s, D.ult(s, p)
    return s


def madc(D, ty, mods, a, b, c, cin):
    """madc{.hi,.lo}{.cc}.type d, a, b, c: d = (a * b)<.hi or .lo half> + c + CC.CF
    -- §Extended-Precision Integer Arithmetic: madc (ptxas requires .lo or .hi; read as
    .lo without). .cc returns (d, carry-out of the two additions)."""
    w = bits(ty)
    p = mul(D, ty, mods - {"cc"}, a, b)
    t = D.add(p, c, w)
    s = D.add(t, _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(t, p), D.ult(s, t))
    return s


def _mul24(D, ty, a, b):
    ext = D.sext if is_signed(ty) else D.zext
    a24 = ext(D.extract(a, 23, 0), 24, 64)
    b24 = ext(D.extract(b, 23, 0), 24, 64)
    p = D.mul(a24, b24, 64)
    return D.extract(p, 31, 0), D.extract(p, 47, 16)


def mul24(D, ty, mods, a, b):
    """mul24{.hi,.lo}.{u32,s32}: 24x24 -> 48-bit product; .lo = bits 31..0, .hi = bits 47..16
    -- §Integer Arithmetic: mul24."""
    lo, hi = _mul24(D, ty, a, b)
    return hi if "hi" in mods else lo


def mad24(D, ty, mods, a, b, c):
    """mad24{.hi,.lo}{.sat}.{u32,s32} -- §Integer Arithmetic: mad24 (.sat: .hi.s32 only)."""
    lo, hi = _mul24(D, ty, a, b)
    p = hi if "hi" in mods else lo
    s = D.add(p, c, 32)
    if "sat" in mods:
        s = _sat_signed(D, p, c, s, 32, False)
    return s


def div(D, ty, mods, a, b):
    """div.type -- §Integer Arithmetic: div (division by zero is unspecified in PTX; we use the
    SMT-LIB value: unsigned -> all ones, signed -> -1 for a >= 0 and 1 for a < 0;
    MININT / -1 wraps to MININT); §Floating-Point: div (.rn/.rz/.rm/.rp are IEEE,
    .approx and .full are approximate)."""
    if is_float(ty):
        if "approx" in mods:
            return _approx(D, ty, mods, "div", a, b)
        if "full" in mods:
            return _approx(D, ty, mods, "div_full", a, b)
        return _farith(D, ty, mods, D.fdiv, a, b)
    w = bits(ty)
    return D.sdiv(a, b, w) if is_signed(ty) else D.udiv(a, b, w)


def rem(D, ty, mods, a, b):
    """rem.type: remainder with the sign of the dividend -- §Integer Arithmetic: rem
    (remainder by zero unspecified in PTX; we return a)."""
    w = bits(ty)
    return D.srem(a, b, w) if is_signed(ty) else D.urem(a, b, w)


def _sign_op_nan(D, F, x, r):
    """abs/neg of a NaN on sm_90: f64 returns the operand made quiet, f32/f16/bf16 the
    canonical NaN (the sign-bit operation is not applied to NaNs)."""
    nan = f_quiet(D, F, x) if F.width == 64 else D.const(F.canonical_nan, F.width)
    return D.ite(f_isnan(D, F, x), nan, r)


def abs(D, ty, mods, a):  # noqa: A001 - PTX name
    """abs -- §Integer Arithmetic: abs (abs(MININT) = MININT); §Floating-Point: abs (clears
    the sign bit, also of NaN; .ftz flushes first)."""
    if is_float(ty):

        def one(et, x):
            F = FORMATS[et]
            if "ftz" in mods:
                x = f_ftz(D, F, x)
            return _sign_op_nan(D, F, x, _fabs_bits(D, F, x))

        return _lanewise(D, ty, one, a)
    w = bits(ty)
    return D.ite(_neg_bool(D, a, w), D.neg(a, w), a)


def neg(D, ty, mods, a):
    """neg -- §Integer Arithmetic: neg (two's complement); §Floating-Point: neg (flips the
    sign bit, also of NaN; .ftz flushes first)."""
    if is_float(ty):

        def one(et, x):
            F = FORMATS[et]
            if "ftz" in mods:
                x = f_ftz(D, F, x)
            return _sign_op_nan(D, F, x, D.xor(x, D.const(F.sign_bit, F.width)))

        return _lanewise(D, ty, one, a)
    return D.neg(a, bits(ty))


def _fminmax(D, ty, mods, a, b, is_max):
    def one(et, x, y):
        F = FORMATS[et]
        if "ftz" in mods:
            x, y = f_ftz(D, F, x), f_ftz(D, F, y)
        xn, yn = f_isnan(D, F, x), f_isnan(D, F, y)
        both_zero = D.band(f_iszero(D, F, x), f_iszero(D, F, y))
        if is_max:
            pick_x = D.bor(D.flt(et, y, x), D.band(both_zero, f_signbit(D, F, y)))
        else:
            pick_x = D.bor(D.flt(et, x, y), D.band(both_zero, f_signbit(D, F, x)))
        r = D.ite(pick_x, x, y)
        nan = f_quiet(D, F, x) if et == "f64" else D.const(F.canonical_nan, F.width)
        if "NaN" in mods:
            r = D.ite(D.bor(xn, yn), nan, r)
        else:
            r = D.ite(xn, D.ite(yn, nan, y), D.ite(yn, x, r))
        if "relu" in mods:
            r = f_relu(D, F, r)
        return r

    return _lanewise(D, ty, one, a, b)


def _iminmax(D, ty, mods, a, b, is_max):
    w = bits(ty)
    lt = D.slt(a, b, w) if is_signed(ty) else D.ult(a, b)
    r = D.ite(lt, b, a) if is_max else D.ite(lt, a, b)
    if "relu" in mods:
        r = D.ite(_neg_bool(D, r, w), D.const(0, w), r)
    return r


def min(D, ty, mods, a, b):  # noqa: A001
    """min -- §Integer Arithmetic: min; §Floating-Point: min: a NaN operand is ignored (both
    NaN -> canonical NaN), .NaN propagates NaN; -0.0 is taken as smaller than +0.0."""
    if is_float(ty):
        return _fminmax(D, ty, mods, a, b, False)
    return _iminmax(D, ty, mods, a, b, False)


def max(D, ty, mods, a, b):  # noqa: A001
    """max -- §Integer Arithmetic: max; §Floating-Point: max (NaN rules as min; +0.0 > -0.0)."""
    if is_float(ty):
        return _fminmax(D, ty, mods, a, b, True)
    return _iminmax(D, ty, mods, a, b, True)


def fma(D, ty, mods, a, b, c):
    """fma.rnd{.ftz}{.sat}.type: a*b+c with a single rounding -- §Floating-Point: fma,
    §Half Precision: fma (incl. .relu)."""
    return _farith(D, ty, mods, D.ffma, a, b, c)


def sqrt(D, ty, mods, a):
    """sqrt{.rnd,.approx}{.ftz}.type -- §Floating-Point: sqrt (.approx uninterpreted)."""
    if "approx" in mods:
        return _approx(D, ty, mods, "sqrt", a)
    return _farith(D, ty, mods, D.fsqrt, a)


def rsqrt(D, ty, mods, a):
    """rsqrt.approx{.ftz}.type -- §Floating-Point: rsqrt (approximate only)."""
    return _approx(D, ty, mods, "rsqrt", a)


def rcp(D, ty, mods, a):
    """rcp{.rnd,.approx}{.ftz}.type -- §Floating-Point: rcp (.rn/.rz/.rm/.rp are IEEE 1/a)."""
    if "approx" in mods:
        return _approx(D, ty, mods, "rcp", a)

    def prim(et, rm, x):
        F = FORMATS[et]
        return D.fdiv(et, rm, D.const(F.one, F.width), x)

    return _farith(D, ty, mods, prim, a)


def _approx_family(name, section):
    def op(D, ty, mods, a):
        return _approx(D, ty, mods, name, a)

    op.__name__ = name
    op.__doc__ = (
        f"{name}.approx{{.ftz}}.type -- {section}: {name}.  Approximate: concrete gives a"
        f" best-effort value, symbolic the uninterpreted approx_{name}_<fmt>."
    )
    return op


ex2 = _approx_family("ex2", "§Floating-Point / §Half Precision")
lg2 = _approx_family("lg2", "§Floating-Point")
sin = _approx_family("sin", "§Floating-Point")
cos = _approx_family("cos", "§Floating-Point")
tanh = _approx_family("tanh", "§Floating-Point / §Half Precision")


def copysign(D, ty, mods, a, b):
    """copysign.type d, a, b: b with the sign of a -- §Floating-Point: copysign."""
    F = FORMATS[ty]
    sb = D.const(F.sign_bit, F.width)
    return D.or_(D.and_(b, D.not_(sb, F.width)), D.and_(a, sb))


_TESTP = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")


def testp(D, ty, mods, a):
    """testp.op.type p, a -- §Floating-Point: testp (normal excludes zero)."""
    F = FORMATS[ty]
    nan, inf = f_isnan(D, F, a), f_isinf(D, F, a)
    op = next(m for m in _TESTP if m in mods)
    if op == "finite":
        return D.bnot(D.bor(nan, inf))
    if op == "infinite":
        return inf
    if op == "number":
        return D.bnot(nan)
    if op == "notanumber":
        return nan
    sub_ = f_issub(D, F, a)
    if op == "subnormal":
        return sub_
    # "normal (not NaN, not Inf)": sm_90 answers true for a zero too (f32 and f64 checked on
    # an H200); subnormals are not normal
    return D.bnot(D.bor(D.bor(nan, inf), sub_))


# ================================================================= logic and shift
def and_(D, ty, mods, a, b):
    """and.type -- §Logic and Shift: and."""
    return D.band(a, b) if ty == "pred" else D.and_(a, b)


def or_(D, ty, mods, a, b):
    """or.type -- §Logic and Shift: or."""
    return D.bor(a, b) if ty == "pred" else D.or_(a, b)


def xor(D, ty, mods, a, b):
    """xor.type -- §Logic and Shift: xor."""
    return D.bxor(a, b) if ty == "pred" else D.xor(a, b)


def not_(D, ty, mods, a):
    """not.type -- §Logic and Shift: not."""
    return D.bnot(a) if ty == "pred" else D.not_(a, bits(ty))


def cnot(D, ty, mods, a):
    """cnot.type: d = (a == 0) ? 1 : 0 -- §Logic and Shift: cnot."""
    w = bits(ty)
    return _bool_to_bv(D, D.eq(a, D.const(0, w)), w)


def shl(D, ty, mods, a, b):
    """shl.type d, a, b (b: u32; amounts >= width give 0) -- §Logic and Shift: shl."""
    w = bits(ty)
    return D.shl(a, _amount(D, b, w), w)


def shr(D, ty, mods, a, b):
    """shr.type (b: u32): arithmetic for .s types (sign fill for amounts >= width), logical
    otherwise -- §Logic and Shift: shr."""
    w = bits(ty)
    n = _amount(D, b, w)
    return D.ashr(a, n, w) if is_signed(ty) else D.lshr(a, n, w)


def lop3(D, ty, mods, a, b, c, lut):
    """lop3.b32 d, a, b, c, immLut: bitwise function given by its truth table (ta=0xF0,
    tb=0xCC, tc=0xAA) -- §Logic and Shift: lop3.  ``lut`` is a Python int."""
    w = bits(ty)
    lut = int(lut) & 0xFF
    if lut == 0:
        return D.const(0, w)
    if lut == 0xFF:
        return D.const(mask(w), w)
    na, nb, nc = D.not_(a, w), D.not_(b, w), D.not_(c, w)
    r = None
    for i in range(8):
        if (lut >> i) & 1:
            t = D.and_(D.and_(a if i & 4 else na, b if i & 2 else nb), c if i & 1 else nc)
            r = t if r is None else D.or_(r, t)
    return r


def shf(D, ty, mods, a, b, c):
    """shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of the 64-bit {b, a};
    .wrap: n = c & 31, .clamp: n = min(c, 32); .l: d = upper 32 bits of ({b,a} << n),
    .r: d = lower 32 bits of ({b,a} >> n) -- §Logic and Shift: shf."""
    if "clamp" in mods:
        n = D.ite(D.ult(c, D.const(32, 32)), c, D.const(32, 32))
    else:
        n = D.and_(c, D.const(31, 32))
    x = D.concat(b, a, 32)
    n64 = D.zext(n, 32, 64)
    if "l" in mods:
        return D.extract(D.shl(x, n64, 64), 63, 32)
    return D.extract(D.lshr(x, n64, 64), 31, 0)


def bfe(D, ty, mods, a, b, c):
    """bfe.type d, a, b, c: extract len = c & 0xff bits from pos = b & 0xff, zero-extended
    (.u) or sign-extended from bit min(pos+len-1, msb) (.s); len 0 gives 0
    -- §Integer Arithmetic: bfe."""
    w = bits(ty)
    m8 = D.const(0xFF, 32)
    pos, ln = D.and_(b, m8), D.and_(c, m8)
    posw, lenw = _amount(D, pos, w), _amount(D, ln, w)
    ones = D.const(mask(w), w)
    m = D.not_(D.shl(ones, lenw, w), w)
    if not is_signed(ty):
        return D.and_(D.lshr(a, posw, w), m)
    field = D.and_(D.ashr(a, posw, w), m)
    idx = D.sub(D.add(pos, ln, 32), D.const(1, 32), 32)
    bit_at = D.eq(D.extract(D.lshr(a, _amount(D, idx, w), w), 0, 0), D.const(1, 1))
    sbit = D.ite(D.ult(idx, D.const(w, 32)), bit_at, _neg_bool(D, a, w))
    sbit = D.band(sbit, D.bnot(D.eq(ln, D.const(0, 32))))
    return D.ite(sbit, D.or_(field, D.not_(m, w)), field)


def bfi(D, ty, mods, a, b, c, d):
    """bfi.type f, a, b, c, d: insert the low len = d & 0xff bits of a into b at
    pos = c & 0xff (bits beyond the msb are dropped) -- §Integer Arithmetic: bfi."""
    w = bits(ty)
    m8 = D.const(0xFF, 32)
    posw = _amount(D, D.and_(c, m8), w)
    lenw = _amount(D, D.and_(d, m8), w)
    m = D.not_(D.shl(D.const(mask(w), w), lenw, w), w)
    ms = D.shl(m, posw, w)
    return D.or_(D.and_(b, D.not_(ms, w)), D.and_(D.shl(a, posw, w), ms))


def _shc(D, x, k, w):
    return D.const(k, w)


def brev(D, ty, mods, a):
    """brev.type: reverse the bits -- §Integer Arithmetic: brev."""
    w = bits(ty)
    x = a
    k = 1
    while k < w:
        # masks selecting the low k bits of every 2k-bit group
        grp = sum(((1 << k) - 1) << i for i in range(0, w, 2 * k))
        mlo = D.const(grp, w)
        kk = D.const(k, w)
        x = D.or_(D.shl(D.and_(x, mlo), kk, w), D.and_(D.lshr(x, kk, w), mlo))
        k *= 2
    return x


def popc(D, ty, mods, a):
    """popc.type d, a: number of one bits, d is .u32 -- §Integer Arithmetic: popc."""
    w = bits(ty)

    def c(v):
        return D.const(v, w)

    rep = lambda byte: sum(byte << i for i in range(0, w, 8))  # noqa: E731
    x = D.sub(a, D.and_(D.lshr(a, c(1), w), c(rep(0x55))), w)
    x = D.add(D.and_(x, c(rep(0x33))), D.and_(D.lshr(x, c(2), w), c(rep(0x33))), w)
    x = D.and_(D.add(x, D.lshr(x, c(4), w), w), c(rep(0x0F)))
    x = D.lshr(D.mul(x, c(rep(0x01)), w), c(w - 8), w)
    return x if w == 32 else D.extract(x, 31, 0)


def clz(D, ty, mods, a):
    """clz.type d, a: leading zeros (width for 0), d is .u32 -- §Integer Arithmetic: clz."""
    w = bits(ty)
    n = D.const(0, 32)
    x = a
    k = w // 2
    while k >= 1:
        top_zero = D.eq(D.lshr(x, D.const(w - k, w), w), D.const(0, w))
        n = D.ite(top_zero, D.add(n, D.const(k, 32), 32), n)
        x = D.ite(top_zero, D.shl(x, D.const(k, w), w), x)
        k //= 2
    return D.ite(D.eq(a, D.const(0, w)), D.const(w, 32), n)


def prmt(D, ty, mods, a, b, c):
    """prmt.b32 d, a, b, c (default mode): byte i of d is byte c[4i+2:4i] of {b, a}, or that
    byte's sign replicated when c[4i+3] is set -- §Data Movement: prmt."""
    if mods & {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}:
        raise NotImplementedError("prmt: only the default mode is implemented")
    src = [D.extract(a, 8 * i + 7, 8 * i) for i in range(4)] + [D.extract(b, 8 * i + 7, 8 * i) for i in range(4)]
    out = None
    for i in range(4):
        sel = D.extract(c, 4 * i + 2, 4 * i)
        byte = src[7]
        for k in range(6, -1, -1):
            byte = D.ite(D.eq(sel, D.const(k, 3)), src[k], byte)
        rep = D.eq(D.extract(c, 4 * i + 3, 4 * i + 3), D.const(1, 1))
        msb = D.eq(D.extract(byte, 7, 7), D.const(1, 1))
        byte = D.ite(rep, D.ite(msb, D.const(0xFF, 8), D.const(0, 8)), byte)
        out = byte if out is None else D.concat(byte, out, 8 * i)
    return out


# ================================================================= comparison and selection
_FCMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
_ICMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")


def _cmp_op(ty, mods):
    ops = _FCMP if is_float(ty) else _ICMP
    for o in ops:
        if o in mods:
            return o
    raise ValueError(f"no comparison operator in {sorted(mods)}")


def compare(D, ty, mods, a, b):
    """The CmpOp of setp/set -- §Comparison and Selection: 'Comparison' tables.  Ordered float
    comparisons are false when either operand is NaN, unordered (..u) ones true."""
    op = _cmp_op(ty, mods)
    if is_float(ty):
        F = FORMATS[ty]
        if "ftz" in mods:
            a, b = f_ftz(D, F, a), f_ftz(D, F, b)
        nan = D.bor(f_isnan(D, F, a), f_isnan(D, F, b))
        base = op[:-1] if op.endswith("u") else op
        if op in ("num", "nan"):
            return D.bnot(nan) if op == "num" else nan
        if base == "eq":
            t = D.feq(ty, a, b)
        elif base == "ne":
            t = D.band(D.bnot(nan), D.bnot(D.feq(ty, a, b)))
        elif base == "lt":
            t = D.flt(ty, a, b)
        elif base == "le":
            t = D.fle(ty, a, b)
        elif base == "gt":
            t = D.flt(ty, b, a)
        else:
            t = D.fle(ty, b, a)
        return D.bor(nan, t) if op.endswith("u") else t
    w = bits(ty)
    if op == "eq":
        return D.eq(a, b)
    if op == "ne":
        return D.bnot(D.eq(a, b))
    signed = is_signed(ty) and op in ("lt", "le", "gt", "ge")
    lt = (lambda x, y: D.slt(x, y, w)) if signed else D.ult
    le = (lambda x, y: D.sle(x, y, w)) if signed else D.ule
    if op in ("lt", "lo"):
        return lt(a, b)
    if op in ("le", "ls"):
        return le(a, b)
    if op in ("gt", "hi"):
        return lt(b, a)
    return le(b, a)


def _combine(D, mods, t, c):
    if "and" in mods:
        return D.band(t, c)
    if "or" in mods:
        return D.bor(t, c)
    if "xor" in mods:
        return D.bxor(t, c)
    return t


def setp(D, ty, mods, a, b, c=None):
    """setp.CmpOp{.BoolOp}{.ftz}.type p|q, a, b{, {!}c}: p = (a CmpOp b) BoolOp c,
    q = !(a CmpOp b) BoolOp c.  Returns (p, q); a negated c is negated by the caller
    -- §Comparison and Selection: setp.

    Packed f16x2/bf16x2 (§Half Precision Comparison: setp): p is the comparison of the
    lower halves, q that of the upper halves, each combined with c."""
    if is_packed(ty):
        e = element(ty)
        t_lo = compare(D, e, mods, D.extract(a, 15, 0), D.extract(b, 15, 0))
        t_hi = compare(D, e, mods, D.extract(a, 31, 16), D.extract(b, 31, 16))
        if c is None:
            return t_lo, t_hi
        return _combine(D, mods, t_lo, c), _combine(D, mods, t_hi, c)
    t = compare(D, ty, mods, a, b)
    if c is None:
        return t, D.bnot(t)
    return _combine(D, mods, t, c), _combine(D, mods, D.bnot(t), c)


def set(D, ty, mods, a, b, c=None):  # noqa: A001
    """set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, c}: d = 1.0f (f32) or 0xffffffff
    (u32/s32) when true, else 0 -- §Comparison and Selection: set."""
    dty, sty = ty
    t = compare(D, sty, mods, a, b)
    if c is not None:
        t = _combine(D, mods, t, c)
    w = bits(dty)
    one = FORMATS[dty].one if is_float(dty) else mask(w)
    return D.ite(t, D.const(one, w), D.const(0, w))


def selp(D, ty, mods, a, b, c):
    """selp.type d, a, b, c: d = c ? a : b -- §Comparison and Selection: selp."""
    return D.ite(c, a, b)


def slct(D, ty, mods, a, b, c):
    """slct{.ftz}.dtype.{s32,f32} d, a, b, c: d = (c >= 0) ? a : b (NaN c selects b;
    -0.0 >= 0) -- §Comparison and Selection: slct."""
    _dty, cty = ty
    if is_float(cty):
        F = FORMATS[cty]
        if "ftz" in mods:
            c = f_ftz(D, F, c)
        cond = D.fle(cty, D.const(0, F.width), c)
    else:
        cond = D.bnot(_neg_bool(D, c, bits(cty)))
    return D.ite(cond, a, b)


# ================================================================= data movement and conversion
def mov(D, ty, mods, *args):
    """mov.type d, a (identity on bit patterns); with several operands, the vector pack form
    mov.bN d, {a0, a1, ...} (a0 is the least significant) -- §Data Movement: mov."""
    if len(args) == 1:
        return args[0]
    ew = bits(ty) // len(args)
    r = args[0]
    for i, x in enumerate(args[1:], start=1):
        r = D.concat(x, r, ew * i)
    return r


def _int_sat_bounds(dty):
    dw = bits(dty)
    if is_signed(dty):
        return -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    return 0, (1 << dw) - 1


def _cvt_int_int(D, dty, sty, mods, a):
    dw, sw = bits(dty), bits(sty)
    sg = is_signed(sty)
    if dw <= sw:
        r = D.extract(a, dw - 1, 0) if dw < sw else a
    else:
        r = (D.sext if sg else D.zext)(a, sw, dw)
    if "sat" not in mods:
        return r
    lo, hi = _int_sat_bounds(dty)
    smin, smax = (-(1 << (sw - 1)), (1 << (sw - 1)) - 1) if sg else (0, (1 << sw) - 1)
    too_big = (D.slt(D.const(hi, sw), a, sw) if sg else D.ult(D.const(hi, sw), a)) if hi < smax else D.boolc(False)
    too_small = D.slt(a, D.const(lo, sw), sw) if lo > smin else D.boolc(False)
    return D.ite(too_big, D.const(hi, dw), D.ite(too_small, D.const(lo, dw), r))


def _pow2_bits(F, k, negative=False):
    """Bits of +-2^k in F, or None if it overflows F."""
    if k > F.emax:
        return None
    return float_to_bits(F.name, -(2**k) if negative else 2**k)


def _cvt_float_int(D, dty, sty, mods, a):
    rm = _irm(mods)
    if rm is None:
        raise ValueError("cvt float->int needs one of .rni/.rzi/.rmi/.rpi")
    F = FORMATS[sty]
    dw = bits(dty)
    sg = is_signed(dty)
    x = f_ftz(D, F, a) if "ftz" in mods else a
    r = D.frint(sty, rm, x)
    lo, hi = _int_sat_bounds(dty)
    hb = _pow2_bits(F, dw - 1 if sg else dw)
    pinf = D.const(F.exp_mask, F.width)
    big = D.fle(sty, D.const(hb, F.width), r) if hb is not None else D.eq(r, pinf)
    if sg:
        lb = _pow2_bits(F, dw - 1, negative=True)
        ninf = D.const(F.exp_mask | F.sign_bit, F.width)
        small = D.flt(sty, r, D.const(lb, F.width)) if lb is not None else D.eq(r, ninf)
    else:
        small = D.flt(sty, r, D.const(0, F.width))
    val = D.f2i(sty, r, dw, sg)
    # NaN: 0, except from f64 or into a 64-bit integer: only the top bit set (sm_90)
    nan_val = (1 << (dw - 1)) if (F.width == 64 or dw == 64) else 0
    return D.ite(
        f_isnan(D, F, x),
        D.const(nan_val, dw),
        D.ite(big, D.const(hi, dw), D.ite(small, D.const(lo, dw), val)),
    )


def _cvt_to_float_post(D, dty, mods, r):
    F = FORMATS[dty]
    if "ftz" in mods and dty == "f32":
        r = f_ftz(D, F, r)
    if "satfinite" in mods:
        maxf = D.const(F.max_finite, F.width)
        r = D.ite(f_isinf(D, F, r), D.or_(maxf, D.and_(r, D.const(F.sign_bit, F.width))), r)
    if "sat" in mods:
        r = f_sat(D, F, r)
    if "relu" in mods:
        r = f_relu(D, F, r)
    return r


def cvt(D, ty, mods, a, b=None):
    """cvt{.irnd,.frnd}{.ftz}{.sat}{.relu}{.satfinite}.dtype.atype -- §Data Movement and
    Conversion: cvt; ty = (dtype, atype).
      int -> int: truncate or sign/zero-extend by atype; .sat clamps to the dtype range.
      int -> float: .rn (default)/.rz/.rm/.rp.
      float -> int: .rni/.rzi/.rmi/.rpi required; always clamps to the dtype range, NaN -> 0.
      float -> float: narrowing rounds with .rn (default)/.rz/.rm/.rp, widening is exact;
        same type with .rni/.rzi/.rmi/.rpi rounds to an integral value.  .ftz flushes f32
        subnormal sources/results; .sat clamps to [0, 1].
      cvt.frnd.{f16x2,bf16x2}.f32 d, a, b: d = {cvt(a) in the upper half, cvt(b) lower}."""
    dty, sty = ty
    if dty == "tf32":
        return _cvt_tf32(D, sty, mods, a)
    if is_packed(dty):
        e = element(dty)
        hi = cvt(D, (e, sty), mods, a)
        lo = cvt(D, (e, sty), mods, b)
        return D.concat(hi, lo, 16)
    if not is_float(dty) and not is_float(sty):
        return _cvt_int_int(D, dty, sty, mods, a)
    if not is_float(dty):
        return _cvt_float_int(D, dty, sty, mods, a)
    if not is_float(sty):
        r = D.i2f(dty, _rm(mods), a, bits(sty), is_signed(sty))
        return _cvt_to_float_post(D, dty, mods, r)
    SF, DF = FORMATS[sty], FORMATS[dty]
    # .ftz flushes an f32 source, except into f16: the H200 rounds a subnormal f32 into the
    # f16 range as it is (cvt.rm.ftz.f16.f32 of -2^-126+ gives -2^-24, not -0)
    x = f_ftz(D, SF, a) if ("ftz" in mods and sty == "f32" and dty != "f16") else a
    irm = _irm(mods)
    if irm is not None:
        if sty != dty:
            raise ValueError("cvt with integer rounding between different float types")
        r = D.frint(sty, irm, x)
        if sty == "f64":
            r = D.ite(f_isnan(D, SF, x), f_quiet(D, SF, x), r)
    elif sty == dty:
        r = f_canon(D, DF, x)
    else:
        r = D.fcvt(dty, sty, _rm(mods), x)
        r = D.ite(f_isnan(D, SF, x), _cvt_nan(D, dty, sty, mods, x), r)
    return _cvt_to_float_post(D, dty, mods, r)


def _cvt_tf32(D, sty, mods, a):
    """cvt.rna.tf32.f32 d, a: the tf32 value of a, in a 32-bit register whose 13 low
    mantissa bits are zero -- §Data Movement and Conversion: cvt (sm_90 has only .rna
    without .satfinite). As ptxas 13.0 expands it for sm_90a (FSETP.GEU |a|, +INF; @!P
    IADD a, 0x1000; LOP3 a & 0xFFFFE000): a finite a is rounded to nearest, ties away from
    zero, on its magnitude bits (from 0x7F7FF000 on to an infinity); an infinity or NaN
    keeps its bits with the 13 low ones cleared (a NaN whose payload lies only there
    becomes an infinity)."""
    if sty != "f32" or "rna" not in mods or "satfinite" in mods:
        raise ValueError(f"cvt to tf32 is cvt.rna.tf32.f32 on sm_90, not {sorted(mods)} from {sty}")
    F = FORMATS["f32"]
    nonfinite = D.ule(D.const(F.exp_mask, 32), _fabs_bits(D, F, a))
    r = D.ite(nonfinite, a, D.add(a, D.const(0x1000, 32), 32))
    return D.and_(r, D.const(0xFFFFE000, 32))


def _cvt_nan(D, dty, sty, mods, x):
    """The NaN a float-to-float cvt gives on sm_90 (checked on an H200): bf16 -> f32 is
    exact (bits shifted, not even quieted); f32 -> f64 and f16 -> f64 keep sign and
    payload, quieted (with .ftz the f32 NaN is canonical first); f64 -> f16 keeps the sign
    and the top payload bits, quieted; every other pair gives the canonical NaN."""
    SF, DF = FORMATS[sty], FORMATS[dty]
    if (dty, sty) == ("f32", "bf16"):
        return D.concat(x, D.const(0, 16), 16)
    if dty == "f64" and sty in ("f32", "f16"):
        if "ftz" in mods and sty == "f32":
            x = D.const(SF.canonical_nan, 32)
        sign = D.extract(x, SF.width - 1, SF.width - 1)
        mant = D.extract(x, SF.mbits - 1, 0)
        body = D.concat(D.const(0x7FF, 11), D.concat(mant, D.const(0, 52 - SF.mbits), 52 - SF.mbits), 52)
        return f_quiet(D, DF, D.concat(sign, body, 63))
    if sty == "f64" and dty in ("f16", "f32"):
        sign = D.extract(x, 63, 63)
        top = D.extract(x, 51, 52 - DF.mbits)
        body = D.concat(D.const((1 << DF.ebits) - 1, DF.ebits), top, DF.mbits)
        return f_quiet(D, DF, D.concat(sign, body, DF.width - 1))
    return D.const(DF.canonical_nan, DF.width)

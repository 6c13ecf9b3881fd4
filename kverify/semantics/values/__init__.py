"""Value semantics of PTX scalar instructions, one definition over two domains.

``ops`` defines each instruction family once against a domain object; ``ConcreteDomain``
(numpy lanes, bit-exact) runs it for the interpreter and ``Z3Domain`` (z3 terms) for the
SMT checkers.  Design decision 4, "One semantics, two domains".  See docs/values.md.

    >>> import numpy as np
    >>> from kverify.semantics.values import evaluate, ConcreteDomain
    >>> evaluate(ConcreteDomain(), "shr", "s32", (), np.array([0xFFFFFFF8], np.uint64),
    ...          np.array([40], np.uint64))
    array([4294967295], dtype=uint64)
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.types import SCALAR_BITS

from . import ops
from .concrete import ConcreteDomain
from .symbolic import Z3Domain
from .types import FLOAT_TYPES, FORMATS, TYPES, bits, bits_to_float, float_to_bits, is_float, is_signed

FAMILIES = {
    "add": ops.add,
    "addc": ops.addc,
    "sub": ops.sub,
    "subc": ops.subc,
    "mul": ops.mul,
    "mad": ops.mad,
    "madc": ops.madc,
    "mul24": ops.mul24,
    "mad24": ops.mad24,
    "div": ops.div,
    "rem": ops.rem,
    "abs": ops.abs,
    "neg": ops.neg,
    "min": ops.min,
    "max": ops.max,
    "fma": ops.fma,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "rcp": ops.rcp,
    "ex2": ops.ex2,
    "lg2": ops.lg2,
    "sin": ops.sin,
    "cos": ops.cos,
    "tanh": ops.tanh,
    "copysign": ops.copysign,
    "testp": ops.testp,
    "and": ops.and_,
    "or": ops.or_,
    "xor": ops.xor,
    "not": ops.not_,
    "cnot": ops.cnot,
    "shl": ops.shl,
    "shr": ops.shr,
    "bfe": ops.bfe,
    "bfi": ops.bfi,
    "brev": ops.brev,
    "dp4a": ops.dp4a,
    "dp2a": ops.dp2a,
    "popc": ops.popc,
    "clz": ops.clz,
    "prmt": ops.prmt,
    "lop3": ops.lop3,
    "shf": ops.shf,
    "setp": ops.setp,
    "set": ops.set,
    "selp": ops.selp,
    "slct": ops.slct,
    "mov": ops.mov,
    "cvt": ops.cvt,
}

#: families whose float results are approximate (uninterpreted in the symbolic domain)
APPROX_FAMILIES = frozenset({"rsqrt", "ex2", "lg2", "sin", "cos", "tanh"})


def is_approximate(family: str, mods) -> bool:
    """True when the result is only specified up to an error bound (symbolically: an UF)."""
    return family in APPROX_FAMILIES or (
        family in ("div", "sqrt", "rcp") and bool({"approx", "full"} & set(mods))
    )


def unspecified_at_zero(family: str, ty) -> bool:
    """An integer division or remainder: its result for a divisor of 0 is unspecified, machine-specific
    (§9.7.1.8 div, §9.7.1.9 rem), where both domains give SMT-LIB's (quotient all ones, remainder the
    dividend)."""
    return family in ("div", "rem") and isinstance(ty, str) and ty[0] in "usb"


def atom_float_mods(op: str, ty: str, mods, space=None) -> frozenset:
    """The rounding modifiers of an atomic float ``op`` of type ``ty`` (``atom``/``red``; ``mods``:
    the instruction's; ``space``: the state space it names, None for a generic address): ``add``
    rounds to nearest even, and ``add.f32`` also flushes subnormal inputs and results to
    sign-preserving zero (PTX ISA §9.7.13.5 atom, §9.7.13.6 red) -- except on ``.shared`` (or
    ``.shared::cta``), where ptxas (13.0, sm_90a) implements it as a compare-and-swap loop around a
    plain ``FADD`` that keeps subnormals. Measured on the H200: red.global.add.f32 of subnormals
    gives signed zeros; atom.shared.add.f32 of two normal values with a subnormal sum gives the
    subnormal (bench/results/conformance_data.json, tests/data/atom_shared). A generic address
    into shared memory is taken to flush, as the global path does (not measured). ``.noftz``
    adds of f16 and bf16 keep subnormals, as do the bulk reductions' (``cp.reduce.async.bulk``),
    which take their modifiers as written."""
    out = frozenset(x for x in mods if x in ("rn", "ftz"))
    if op == "add" and ty.startswith(("f", "bf")):
        out |= {"rn"}
        if ty == "f32" and space not in ("shared", "shared::cta"):
            out |= {"ftz"}
    return out


#: families whose type argument is a pair (destination/first type, source/second type):
#: ``cvt.f32.s32``, ``set.eq.u32.f32``, ``slct.f32.s32``, ``dp4a.s32.u32`` (a's and b's types)
TWO_TYPES = ("cvt", "set", "slct", "dp4a", "dp2a")


def family_type(family: str, tys: tuple):
    """The ``ty`` argument of ``evaluate`` for an instruction of ``family`` with the type modifiers
    ``tys`` (source order): a pair for ``TWO_TYPES`` (the one type twice when only one is given), else
    the first type."""
    if family in TWO_TYPES:
        return (tys[0], tys[1]) if len(tys) > 1 else (tys[0], tys[0])
    return tys[0]


def source_bits(family: str, ty, mods, i: int) -> int:
    """Width of source operand ``i`` of ``family`` (immediates are truncated to it): the
    instruction type's width, except shift amounts, bit-field positions/lengths and
    ``prmt`` selectors (32 bits) and the addend of ``mad.wide`` (twice the width)."""
    try:
        b = bits(ty if isinstance(ty, str) else ty[1])
    except (KeyError, ValueError):
        b = 64
    if (family in ("shl", "shr") and i == 1) or (family == "bfe" and i >= 1) or \
            (family == "bfi" and i >= 2) or (family == "shf" and i == 2) or family == "prmt":
        return 32
    if family == "mad" and "wide" in mods and i == 2:
        return 2 * b
    return b


def source_widths(family: str, ty, mods, n: int) -> list:
    """Bit width of each of the ``n`` source operands of a value instruction of ``family`` with
    type ``ty`` (a name, or ``(dtype, stype)`` for cvt/set/slct): the instruction's width,
    except shift amounts, bit positions and lengths (32), ``mad.wide``'s addend (2w), predicate
    operands (1) and ``lop3``'s immediate (not a source here)."""
    if family in ("dp4a", "dp2a"):
        return [32] * n
    if family in ("cvt", "set", "slct"):
        dty, sty = ty
        srcw = [SCALAR_BITS[sty]] * n
        if family == "slct":
            srcw = [SCALAR_BITS[dty], SCALAR_BITS[dty], SCALAR_BITS[sty]][:n]
        if family == "set" and n > 2:
            srcw[-1] = 1
        return srcw
    w = SCALAR_BITS[ty]
    srcw = [w] * n
    if family in ("shl", "shr"):
        srcw[1:] = [32] * (n - 1)
    elif family == "mad" and "wide" in mods:
        srcw[2:] = [2 * w]
    elif family in ("setp", "set") and n > 2:
        srcw[2] = 1
    elif family == "selp":
        srcw[2] = 1
    elif family == "bfe":
        srcw[1:] = [32, 32]
    elif family == "bfi":
        srcw[2:] = [32, 32]
    elif family in ("prmt", "shf"):
        srcw[2:] = [32]
    elif family == "lop3":
        srcw = srcw[:-1]
    if ty == "pred":
        srcw = [1 if x == 1 or family != "selp" else x for x in srcw]
    return srcw


def evaluate(D, family: str, ty, mods, *args):
    """Evaluate one instruction family in domain ``D``.

    ``ty``: a PTX type name, or ``(dtype, stype)`` for cvt/set/slct.  ``mods``: modifier
    names (any iterable).  ``args``: operand bit patterns (numpy uint64 / bool arrays for
    the concrete domain, z3 BitVec / Bool for the symbolic one).  Concrete results are
    broadcast to the lanes' shape.  Tuples come back for setp and for .cc forms.
    """
    try:
        fn = FAMILIES[family]
    except KeyError:
        raise NotImplementedError(f"no value semantics for PTX family {family!r}") from None
    r = fn(D, ty, mods if type(mods) is frozenset else frozenset(mods), *args)
    if getattr(D, "symbolic", False):
        return r
    if type(r) is tuple:  # the interpreter's common case first: one warp's 32 lanes
        parts = tuple(_lanes(x, args) for x in r)
        if all(x is not None for x in parts):
            return parts
    else:
        x = _lanes(r, args)
        if x is not None:
            return x
    shape = np.broadcast_shapes(*(np.shape(a) for a in args)) if args else ()
    if isinstance(r, tuple):
        return tuple(_shape(x, shape) for x in r)
    return _shape(r, shape)


def _lanes(x, args):
    """``_shape``'s result for a result ``x`` of one warp's 32 lanes, without the broadcast: ``x``
    itself when it is a fresh uint64 or bool array (none of the operands), else a converted copy;
    None for any other shape."""
    if type(x) is not np.ndarray or x.shape != (32,):
        return None
    dt = np.bool_ if x.dtype == np.bool_ else np.uint64
    if x.dtype == dt and not any(x is a for a in args):
        return x
    return np.array(x, dtype=dt)


def _shape(x, shape):
    x = np.asarray(x)
    if shape == () and x.size == 1:  # every operand an immediate: a scalar result
        x = x.reshape(())
    dt = np.bool_ if x.dtype == np.bool_ else np.uint64
    return np.array(np.broadcast_to(x, shape), dtype=dt)


__all__ = [
    "APPROX_FAMILIES",
    "ConcreteDomain",
    "FAMILIES",
    "FLOAT_TYPES",
    "FORMATS",
    "TYPES",
    "Z3Domain",
    "bits",
    "bits_to_float",
    "evaluate",
    "family_type",
    "TWO_TYPES",
    "source_bits",
    "float_to_bits",
    "is_approximate",
    "is_float",
    "is_signed",
    "ops",
    "unspecified_at_zero",
]

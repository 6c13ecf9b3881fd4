"""Value semantics of the PTX scalar instructions, written once over a domain ``D``.

Owns: what each instruction family computes from its operands' bit patterns.  Every
family is a function ``family(D, ty, mods, *operands)`` and uses only the primitive
vocabulary of the domain (:class:`~semantics.values.concrete.ConcreteDomain` for numpy lanes,
:class:`~semantics.values.symbolic.Z3Domain` for z3 terms), so the interpreter and the SMT
checkers share one definition.  The families live by group: ``arithmetic`` (integer and
float), ``floating`` (float-only), ``logic`` (logic, shift, bit manipulation),
``comparison`` (comparison and selection), ``conversion`` (data movement and conversion),
on the helpers of ``common``; this package exports the families.

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

from .arithmetic import abs, add, addc, div, dp2a, dp4a, mad, mad24, madc, max, min, mul, mul24, neg, rem, sub, subc
from .comparison import compare, selp, set, setp, slct
from .conversion import cvt, mov
from .floating import copysign, cos, ex2, fma, lg2, rcp, rsqrt, sin, sqrt, tanh, testp
from .logic import and_, bfe, bfi, brev, clz, cnot, lop3, not_, or_, popc, prmt, shf, shl, shr, xor

__all__ = [
    "abs", "add", "addc", "and_", "bfe", "bfi", "brev", "clz", "cnot", "compare", "copysign", "cos", "cvt",
    "div", "dp2a", "dp4a", "ex2", "fma", "lg2", "lop3", "mad", "mad24", "madc", "max", "min", "mov", "mul", "mul24", "neg",
    "not_", "or_", "popc", "prmt", "rcp", "rem", "rsqrt", "selp", "set", "setp", "shf", "shl", "shr", "sin",
    "slct", "sqrt", "sub", "subc", "tanh", "testp", "xor",
]

"""Value-computing families (every op-table row whose ``semantics`` is a family of
``kverify.semantics.values``): operands are read per lane, evaluated in the concrete domain
(the same definitions the SMT checkers use), written back; plus CC.CF, the carry flag.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Neg, PairOp, Reg, VecOp
from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.ir.optable import OPS
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.memory_model.execution import DIV_BY_ZERO
from kverify.semantics.values import FAMILIES, evaluate, family_type, source_bits, unspecified_at_zero
from kverify.semantics.values.concrete import quiet

from ..state import D, U64, low_mask
from .common import bits_of, registry

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- value families

WIDE_SRC = {"mul", "mad"}

#: CC.CF, the carry flag of the condition code register (§9.7.2 extended-precision integer
#: arithmetic): per thread, kept in the warp's register file under a name no PTX register
#: can have, so a call (which gives the callee fresh registers) does not carry it across,
#: as the ISA says ("not preserved across calls"). Before any ``.cc`` instruction wrote
#: it, it reads 0 (the ISA leaves it open).
CARRY = "%cc.cf"
CARRY_IN = ("addc", "subc", "madc")
CARRY_OUT = ("add", "sub", "mad", "addc", "subc", "madc")


def _divisor_zero(m, w, ins, mask, divisor):
    """``arith.div-by-zero`` when a lane of ``mask`` divides by 0 (the run goes on with the value
    the value semantics gives, SMT-LIB's)."""
    lanes = np.flatnonzero(mask & (np.asarray(divisor) == 0))
    if not len(lanes):
        return
    first = m._thread(w, int(lanes[0]))
    m.report(DIV_BY_ZERO.id, f"{ins.opcode} with divisor 0 in {len(lanes)} lane(s) of {w.describe()}, first {first} "
             f"at {_fmt_loc(ins.loc)}: the ISA leaves the result unspecified (machine-specific); the run goes on "
             f"with SMT-LIB's value, which the GPU need not give ({DIV_BY_ZERO.section})", [ins.loc], thread=first)


def carry_flag(w):
    v = w.regs.get(CARRY)
    return np.zeros(32, bool) if v is None else v


def _plan(m, ins):
    """What ``h_value`` needs of ``ins`` beyond the registers' values, worked out once per
    instruction (``Machine.value_plans``): the family, the type, the modifiers and how each source
    operand is read. Raises ``Unsupported`` for a form without a type."""
    fam = ins.row.semantics
    tys = ins.types()
    ops = ins.operands
    if not tys:
        raise Unsupported(f"{ins.opcode}: no type", ins)
    ty = family_type(fam, tys)
    mods = frozenset(ins.mods)
    if ty == "pred" and fam in ("and", "or", "xor", "not", "mov"):
        return ("pred", fam, ty, mods, ())
    srcs = ops[1:]
    if fam == "mov" and isinstance(ops[0], VecOp):
        kind = "unpack"
    elif fam == "mov" and srcs and isinstance(srcs[0], VecOp):
        kind = "pack"
    else:
        kind = "value"
    reads = []  # per source: ("pred", operand) | ("imm", value) | ("pack", None) | ("val", operand, bits, narrow)
    for i, o in enumerate(srcs):
        if fam in ("selp", "setp", "set") and i == 2:
            reads.append(("pred", o))  # {!}c
        elif fam == "lop3" and i == 3:
            reads.append(("imm", U64(o.value & 0xFF)))
        elif fam == "mov" and isinstance(o, VecOp):  # pack form, handled from the operands
            reads.append(("pack", None))
        else:
            bits = source_bits(fam, ty, mods, i)
            # a register wider than the type: its low bits
            narrow = isinstance(o, Reg) and bits < 64 and m.reg_width(o.name) > bits
            reads.append(("val", o, bits, narrow))
    return (kind, fam, ty, mods, tuple(reads))


def h_value(m, w, ins, mask):
    plan = m.value_plans.get(id(ins))
    if plan is None:
        plan = m.value_plans[id(ins)] = _plan(m, ins)
    kind, fam, ty, mods, reads = plan
    ops = ins.operands
    if kind == "pred":
        vals = [m.pred(w, o.reg) if hasattr(o, "reg") and not isinstance(o, Reg) else
                (m.pred(w, o) if isinstance(o, Reg) else np.full(32, bool(o.value))) for o in ops[1:]]
        r = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
             "not": lambda a: ~a, "mov": lambda a: a}[fam](*vals)
        m.write(w, ops[0], r, mask)
        return
    args = []
    for rd in reads:
        how = rd[0]
        if how == "val":
            v = m.val(w, rd[1], rd[2])
            if rd[3]:
                v = np.asarray(v, U64) & U64(low_mask(rd[2]))
            args.append(v)
        elif how == "pred":
            o = rd[1]
            args.append(~m.pred(w, o.reg) if isinstance(o, Neg) else m.pred(w, o))
        elif how == "imm":
            args.append(rd[1])
        else:
            args.append(None)
    if kind == "unpack":  # mov.b64 {a, b}, %rd
        v = args[0]
        n = len(ops[0].elems)
        eb = bits_of(ty) // n
        for j, e in enumerate(ops[0].elems):
            m.write(w, e, (np.asarray(v, U64) >> U64(eb * j)) & U64(low_mask(eb)), mask)
        return
    if kind == "pack":  # mov.b64 %rd, {a, b}
        elems = ops[1].elems
        eb = bits_of(ty) // len(elems)
        acc = np.zeros(32, U64)
        for j, e in enumerate(elems):
            acc |= (np.asarray(m.val(w, e, eb), U64) & U64(low_mask(eb))) << U64(eb * j)
        m.write(w, ops[0], acc, mask)
        return
    if fam in CARRY_IN:
        args.append(carry_flag(w))
    if unspecified_at_zero(fam, ty):
        _divisor_zero(m, w, ins, mask, args[1])
    with quiet():
        if any(x is None for x in args) or (fam == "cvt" and isinstance(ty, tuple) and ty[0] in ("f16x2", "bf16x2")
                                            and len(args) < 2):  # a form with fewer operands than it reads
            raise Unsupported(f"{ins.opcode}: an operand this form reads is missing", ins)
        try:
            r = evaluate(D, fam, ty, mods, *args)
        except ValueError as e:  # a form the value semantics does not define (setp.e4m3, cvt.u64.f16 without .rzi)
            raise Unsupported(f"{ins.opcode}: {e} for {fam}", ins) from None
        except KeyError as e:  # a float operation given an integer type (ex2.approx.u64)
            if not (e.args and e.args[0] in SCALAR_BITS):
                raise
            raise Unsupported(f"{ins.opcode}: no value semantics for type {e.args[0]} in {fam}", ins) from None
    dst = ops[0]
    if "cc" in mods and fam in CARRY_OUT:  # (d, carry-out): the carry goes to CC.CF
        r, cf = r
        w.regs[CARRY] = np.where(mask, cf, carry_flag(w))
    if fam == "cvt" and isinstance(dst, Reg) and ty[0][0] == "s" and SCALAR_BITS[ty[0]] < m.reg_width(dst.name):
        b = SCALAR_BITS[ty[0]]  # a signed result narrower than its register is sign-extended
        r = np.asarray(r, U64)
        r = np.where((r >> U64(b - 1)) & U64(1), r | ~U64(low_mask(b)), r)
    if isinstance(r, tuple):
        if isinstance(dst, PairOp):
            m.write(w, dst.first, r[0], mask)
            m.write(w, dst.second, r[1], mask)
        else:
            m.write(w, dst, r[0], mask)
        return
    m.write(w, dst, r, mask)


HANDLERS.update({name: h_value for name, row in OPS.items() if row.semantics in FAMILIES})

"""Value instructions in the equivalence walk: every row whose ``semantics`` is a value
family (``kverify.semantics.values.FAMILIES``, PTX ISA 9.7.1-9.7.9) runs through the
algebra's ``family``, with predicate logic on concrete booleans, vector pack/unpack of
``mov``, and the carry flag CC.CF (PTX ISA 9.7.2) as per-thread state.
"""
from __future__ import annotations

from kverify.semantics.interpreter.ops import CARRY, CARRY_IN, CARRY_OUT
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Neg, PairOp, Reg, VecOp
from kverify.semantics.ir.optable import operand_bits
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.values import family_type, source_bits

from ..algebra import ModelUnsupported


#: value families whose result is not a computed value worth matching (terms.py): copies and comparisons
NOT_NOTED = ("mov", "setp", "set")


class ValueHandlers:
    """The value handlers of :class:`~.executor.Executor`."""

    # ------------------------------------------------------------------ handlers
    def _decode(self, ins):
        d = self._dec.get(id(ins))
        if d is None:
            fam = ins.row.semantics
            tys = ins.types()
            if not tys:
                raise Unsupported(f"{ins.opcode}: no type", ins)
            ty = family_type(fam, tys)
            mods = frozenset(m for m in ins.mods if m not in SCALAR_BITS)
            widths = [source_bits(fam, ty, mods, i) for i in range(len(ins.operands) - 1)]
            d = self._dec[id(ins)] = (fam, ty, mods, widths, (ins, tys))
        return d

    def h_value(self, t, ins):
        fam, ty, mods, widths0, _keep = self._decode(ins)
        ops = ins.operands
        if ty == "pred" and fam in ("and", "or", "xor", "not", "mov"):
            vals = [self.pred(t, o) if isinstance(o, Reg) else (self.val(t, o, 1) if isinstance(o, Neg)
                                                                 else bool(o.value)) for o in ops[1:]]
            if all(type(v) is bool for v in vals):
                r = {"and": lambda a, b: a and b, "or": lambda a, b: a or b, "xor": lambda a, b: a != b,
                     "not": lambda a: not a, "mov": lambda a: a}[fam](*vals)
            else:
                r = self.alg.family(fam, "pred", mods, vals, [1] * len(vals))
            self.write(t, ops[0], r)
            return None
        srcs = ops[1:]
        if fam == "mov" and isinstance(ops[0], VecOp):  # unpack
            w = SCALAR_BITS[ty]
            v = self.val(t, srcs[0], w)
            n = len(ops[0].elems)
            for j, e in enumerate(ops[0].elems):
                self.write(t, e, self.alg.extract_bytes(v, j * w // n // 8, w // n // 8, w // 8))
            return None
        if fam == "mov" and srcs and isinstance(srcs[0], VecOp):  # pack
            w = SCALAR_BITS[ty]
            n = len(srcs[0].elems)
            eb = w // n
            pieces = [(self.val(t, e, eb), eb // 8) for e in srcs[0].elems]
            self.write(t, ops[0], self.alg.concat_bytes(pieces))
            return None
        args, widths = [], []
        for i, o in enumerate(srcs):
            if i == 2 and operand_bits(ins, 3) == 1:  # selp/setp/set's predicate c
                args.append(self.pred(t, o) if isinstance(o, Reg) else self.val(t, o, 1))
                widths.append(1)
                continue
            if fam == "lop3" and i == 3:
                args.append(o.value & 0xFF)
                widths.append(8)
                continue
            w = widths0[i]
            args.append(self.val(t, o, w))
            widths.append(w)
        if fam in CARRY_IN:
            args.append(t.regs.get(CARRY, False))
            widths.append(1)
        r = self.alg.family(fam, ty, mods, args, widths)
        dst = ops[0]
        if "cc" in mods and fam in CARRY_OUT:  # (d, carry-out): the carry goes to CC.CF
            if not isinstance(r, tuple):
                raise ModelUnsupported(f"{ins.opcode}: the carry flag of integer arithmetic on real values "
                                       f"({self.alg.model} model)")
            r, t.regs[CARRY] = r
        if self.terms is not None and fam not in NOT_NOTED and not isinstance(r, tuple):
            self.terms.note(ins.loc, "arith", r)
        if isinstance(r, tuple):
            if isinstance(dst, PairOp):
                self.write(t, dst.first, r[0])
                self.write(t, dst.second, r[1])
            else:
                self.write(t, dst, r[0])
            return None
        self.write(t, dst, r)
        return None

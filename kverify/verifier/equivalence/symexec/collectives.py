"""Warp collectives in the equivalence walk: a thread reaching ``shfl``/``vote``/``elect``/
``activemask``/``redux``/``match`` blocks with its operands; once every live thread of the
warp is blocked the collective runs on all lanes at once (``shfl.sync`` PTX ISA 9.7.9, the
others 9.7.13).
"""
from __future__ import annotations

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import FImm, Imm, Neg, PairOp, Reg, Sink
from kverify.semantics.ir.optable import collective_of, operand_bits
from kverify.semantics.values.collectives import shfl_source

from ..algebra import DataDependent, is_concrete


class CollectiveHandlers:
    """The warp-collective handlers of :class:`~.executor.Executor`."""

    def h_coll(self, t, ins):
        ops = ins.operands
        vals = []
        for i, o in enumerate(ops):
            if i == 0 or isinstance(o, (PairOp, Sink)):
                vals.append(None)
            elif isinstance(o, (Reg, Imm, Neg, FImm)):
                w = operand_bits(ins, i) or 32
                vals.append(self.pred(t, o) if w == 1 and isinstance(o, Reg) else self.val(t, o, w))
            else:
                vals.append(None)
        return self._coll_gen(t, ins, vals)

    def _coll_gen(self, t, ins, vals):
        r = yield ("coll", ins, vals, t)
        dsts = ins.operands[0]
        outs = dsts if isinstance(dsts, tuple) else None
        if isinstance(dsts, PairOp):
            self.write(t, dsts.first, r[0])
            self.write(t, dsts.second, r[1])
        else:
            self.write(t, dsts, r[0] if isinstance(r, tuple) else r)
        return None

    def _collective(self, members):
        ins = members[0].event[1]
        lanes = {t.linear % 32: t for t in members}
        vals = {t.linear % 32: t.event[2] for t in members}
        coll = collective_of(ins)
        res = {}
        if coll == "shuffle":
            mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
            for lane, v in vals.items():
                b, c = v[2], v[3]
                if not (is_concrete(b) and is_concrete(c)):
                    raise DataDependent("a shfl lane operand depends on input data")
                j, ok = shfl_source(mode, lane, b, c)
                if j not in vals:
                    raise Unsupported(f"shfl reads lane {j}, which does not take part", ins)
                res[lane] = (vals[j][1], ok)
        elif coll == "vote":
            preds = {l: v[1] for l, v in vals.items()}
            if not all(type(p) is bool for p in preds.values()):
                raise DataDependent("a vote predicate depends on input data")
            ballot = sum(1 << l for l, p in preds.items() if p)
            kind = next(x for x in ins.mods if x in ("all", "any", "uni", "ballot"))
            r = {"all": all(preds.values()), "any": any(preds.values()),
                 "uni": len(set(preds.values())) == 1, "ballot": ballot}[kind]
            res = {l: r for l in vals}
        elif coll == "elect":
            leader = min(vals)
            res = {l: (leader, l == leader) for l in vals}
        elif coll == "activemask":
            m = sum(1 << l for l in vals)
            res = {l: m for l in vals}
        elif coll == "reduce":
            kind = next(x for x in ins.mods if x in ("add", "min", "max", "and", "or", "xor"))
            ty = ins.types()[-1]
            acc = None
            for l in sorted(vals):
                v = vals[l][1]
                acc = v if acc is None else self.alg.family(kind, ty, frozenset(), [acc, v], [32, 32])
            res = {l: acc for l in vals}
            if self.terms is not None:
                self.terms.note(ins.loc, "reduce", acc)
        elif coll == "mma":  # mma.sync.aligned (tensorcore.py)
            res = self._mma_sync(ins, members)
        elif coll == "matrix":  # ldmatrix / stmatrix (tensorcore.py)
            res = self._matrix(ins, members)
        elif coll == "match":  # §9.7.13 match.sync, as the interpreter's h_match
            mm = vals[min(vals)][2]
            if not all(is_concrete(v[1]) for v in vals.values()) or not is_concrete(mm):
                raise DataDependent("a match.sync operand depends on input data")
            act = {l: v[1] for l, v in vals.items() if (mm >> l) & 1}
            if "any" in ins.mods:
                res = {l: sum(1 << j for j, b in act.items() if b == v[1]) for l, v in vals.items()}
            else:
                equal = len(set(act.values())) <= 1
                d = sum(1 << j for j in act) if equal else 0
                res = {l: (d, equal) for l in vals}
        else:
            raise Unsupported(f"warp collective {ins.opcode}", ins)
        for l, t in lanes.items():
            t.resume = res[l]

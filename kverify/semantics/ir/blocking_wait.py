"""The ``mbarrier.try_wait`` retry loop as one blocking wait.

``L: mbarrier.try_wait p, ...; [pure ops on p]; @!q bra L`` polls until the barrier phase
completes (PTX ISA 9.7.13.15.16, mbarrier.test_wait/try_wait); the structured loop becomes
the wait with ``Instr.blocking`` set, when folding the pure ops on ``p`` = 0 and 1 shows the
loop continues exactly when the wait returned False.
"""
from __future__ import annotations

from dataclasses import replace

from .nodes import Continue, If, Imm, Instr, Reg
from .optable import is_polling_wait, semantics_of


#: Value semantics the retry loop of a polling wait may compute its exit condition with
#: (``_eval_pure`` folds them on constants).
_PURE = ("mov", "selp", "setp", "not", "and", "or", "xor", "cvt")


def _blocking_wait(label, body):
    """``L: try_wait p, ...; [pure ops on p]; @!q bra L`` -> one blocking wait."""
    if len(body) < 2 or not isinstance(body[-1], If):
        return None
    tail = body[-1]
    if tail.orelse or len(tail.then) != 1 or not isinstance(tail.then[0], Continue) \
            or tail.then[0].label != label:
        return None
    waits = [i for i, x in enumerate(body[:-1]) if isinstance(x, Instr) and is_polling_wait(x)]
    if len(waits) != 1 or waits[0] != 0 and not all(
            isinstance(x, Instr) and semantics_of(x) in _PURE for x in body[:waits[0]]):
        return None
    wi = waits[0]
    wait = body[wi]
    pure = body[wi + 1:-1]
    if wait.guard is not None or not all(isinstance(x, Instr) and semantics_of(x) in _PURE and x.guard is None
                                         for x in pure):
        return None
    if not wait.supported or not wait.operands or not all(x.supported and x.operands for x in pure):
        return None
    p = wait.operands[0]
    if not isinstance(p, Reg):
        return None
    # the loop must continue exactly when the wait returned False
    for val, want in ((0, True), (1, False)):
        env = {p.name: val}
        for x in pure:
            if not _eval_pure(x, env):
                return None
        c = env.get(tail.cond.name)
        if c is None:
            return None
        if bool(c) != (not tail.negated) == want and (bool(c) ^ tail.negated) != want:
            return None
        if (bool(c) ^ tail.negated) != want:
            return None
    return list(body[:wi]) + [replace(wait, blocking=True)] + list(pure)


def _eval_pure(x: Instr, env) -> bool:
    def v(o):
        if isinstance(o, Imm):
            return o.value
        if isinstance(o, Reg):
            return env.get(o.name)
        return None

    d = x.operands[0]
    args = [v(o) for o in x.operands[1:]]
    if not isinstance(d, Reg):
        return False
    sem = semantics_of(x)
    if sem == "selp" and None not in args:
        env[d.name] = args[0] if args[2] else args[1]
    elif sem == "mov" and None not in args:
        env[d.name] = args[0]
    elif sem == "not" and None not in args:
        env[d.name] = int(not args[0]) if "pred" in x.mods else ~args[0]
    elif sem == "setp" and None not in args[:2]:
        a, b = args[0], args[1]
        cmp = next(m for m in x.mods if m in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"))
        r = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
             "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}[cmp]
        env[d.name] = int(r)
    elif sem in ("and", "or", "xor") and None not in args:
        env[d.name] = {"and": args[0] & args[1], "or": args[0] | args[1], "xor": args[0] ^ args[1]}[sem]
    else:
        return False
    return True

"""The ``mbarrier.try_wait`` retry loop as one blocking wait.

``L: mbarrier.try_wait p, ...; [pure ops on p]; @!q bra L`` polls until the barrier phase
completes (PTX ISA 9.7.13.15.16, mbarrier.test_wait/try_wait); the structured loop becomes
the wait with ``Instr.blocking`` set, when folding the pure ops on ``p`` = 0 and 1 shows the
loop continues exactly when the wait returned False, and no instruction of the loop reads a
value an earlier try left (a parity flipped at every try would make the second try succeed on
the phase before). The folding is exact: integers of the instruction's type, modulo its width,
signed or unsigned as the type (and ``lo``/``hi``/``ls``/``hs``) says; ``setp``'s combining
predicate is read; anything else (floats, an operand the loop does not define) is not folded.
"""
from __future__ import annotations

import operator
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
    if _carried(body[:-1]):
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


def _carried(body) -> bool:
    """Some instruction of a retry loop's body reads a register that it or a later instruction
    defines: a value an earlier try left."""
    for i, x in enumerate(body):
        reads = _names(x.operands[1:], set()) | ({x.guard.reg.name} if x.guard is not None else set())
        if reads & {_defined(y) for y in body[i:]}:
            return True
    return False


_TYPES = {f"{k}{w}": (w, k == "s") for k in "bus" for w in (8, 16, 32, 64)}


def _eval_pure(x: Instr, env) -> bool:
    """Fold ``x`` on the known registers ``env`` (name -> value: an integer modulo the register's
    width, a predicate 0 or 1); False when it cannot be folded exactly."""
    ty = next((m for m in x.mods if m in _TYPES or m == "pred"), None)
    if ty is None:
        return False
    width, signed = (1, False) if ty == "pred" else _TYPES[ty]
    mask = (1 << width) - 1

    def v(o):
        if isinstance(o, Imm):
            return o.value & mask
        if isinstance(o, Reg):
            return env.get(o.name)
        return None

    d = x.operands[0]
    if not isinstance(d, Reg):
        return False
    args = [v(o) for o in x.operands[1:]]
    sem = semantics_of(x)
    if sem == "setp":
        cmp = next((m for m in x.mods if m in _CMP), None)
        if cmp is None or len(args) < 2 or None in args[:2] or ty == "pred":
            return False
        a, b = args[0], args[1]
        if signed and cmp in ("lt", "le", "gt", "ge"):
            a, b = (t - (1 << width) if t >> (width - 1) else t for t in (a, b))
        elif ty.startswith("b") and cmp not in ("eq", "ne"):
            return False
        r = int(_CMP[cmp](a, b))
        bool_op = next((m for m in x.mods if m in ("and", "or", "xor")), None)
        if len(args) > 2 or bool_op is not None:  # setp.CmpOp.BoolOp p, a, b, c: combined with c
            if bool_op is None or len(args) != 3 or args[2] is None:
                return False
            r = {"and": r & args[2], "or": r | args[2], "xor": r ^ args[2]}[bool_op]
        env[d.name] = r
    elif None in args:
        return False
    elif sem == "selp" and len(args) == 3:
        env[d.name] = args[0] if args[2] else args[1]
    elif sem == "mov" and len(args) == 1:
        env[d.name] = args[0]
    elif sem == "not" and len(args) == 1:
        env[d.name] = ~args[0] & mask
    elif sem in ("and", "or", "xor") and len(args) == 2:
        env[d.name] = {"and": args[0] & args[1], "or": args[0] | args[1], "xor": args[0] ^ args[1]}[sem] & mask
    else:
        return False
    return True


#: setp's comparisons (lo/ls/hi/hs: the unsigned ones, on values already read as unsigned)
_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
        "ge": operator.ge, "lo": operator.lt, "ls": operator.le, "hi": operator.gt, "hs": operator.ge}


# --------------------------------------------------------------------------- peek-then-wait
def _names(o, acc):
    if isinstance(o, Reg):
        acc.add(o.name)
    elif isinstance(o, (tuple, list)):
        for x in o:
            _names(x, acc)
    elif hasattr(o, "__dataclass_fields__") and not isinstance(o, (Imm,)):
        for f in o.__dataclass_fields__:
            _names(getattr(o, f), acc)
    return acc


def _defined(x: Instr) -> str | None:
    d = x.operands[0] if x.operands else None
    return d.name if isinstance(d, Reg) else None


def _reads(stmts, name: str) -> bool:
    """Whether ``name`` is read anywhere in ``stmts`` (conservative: any mention but a plain
    destination counts)."""
    for s in stmts:
        if isinstance(s, Instr):
            if name in _names(s.operands[1:], set()) or s.guard is not None and s.guard.reg.name == name:
                return True
        elif isinstance(s, If):
            if s.cond.name == name or _reads(s.then, name) or _reads(s.orelse, name):
                return True
        elif hasattr(s, "body"):
            if _reads(s.body, name):
                return True
    return False


def _peek_then_wait(stmts: list) -> list:
    """``try_wait p, [bar], P; [pure ops on p]; if (peek failed) { blocking wait [bar], P }`` ->
    one blocking wait.

    CUTLASS's pipelines (``consumer_try_wait`` then ``consumer_wait(state, token)``) probe the
    barrier once and fall back to the blocking retry loop on the same barrier and phase when the
    probe fails. Both outcomes leave the thread past the completion of the same phase with
    nothing but register arithmetic in between, so the pair is that one blocking wait issued at
    the probe (PTX ISA 9.7.13.15.16: a successful try_wait is the same acquire as the blocking
    one). Recognized when folding the pure ops on ``p`` = 0 and 1 shows the fallback branch is
    taken exactly when the probe returned False, the other branch is empty, the fallback is
    the recognized blocking wait with the probe's opcode and barrier/phase operands (not
    redefined in between; it may add the suspend-time hint, set up by pure register ops in the
    fallback whose results are not read afterwards), and its predicate is not read afterwards.
    """
    out = list(stmts)
    i = 0
    while i < len(out):
        peek = out[i]
        if not (isinstance(peek, Instr) and is_polling_wait(peek) and not peek.blocking
                and peek.guard is None and peek.supported and peek.operands
                and isinstance(peek.operands[0], Reg)):
            i += 1
            continue
        j = i + 1
        while j < len(out) and isinstance(out[j], Instr) and out[j].guard is None \
                and out[j].supported and out[j].operands and semantics_of(out[j]) in _PURE:
            j += 1
        folded = _fold_peek(peek, out[i + 1:j], out[j] if j < len(out) else None, out[j + 1:])
        if folded is None:
            i += 1
            continue
        out[i:j + 1] = [replace(peek, blocking=True)] + list(out[i + 1:j])
        i = j
    return out


def _fold_peek(peek: Instr, pure: list, s, rest) -> bool | None:
    if not isinstance(s, If):
        return None
    p = peek.operands[0].name
    args = _names(peek.operands[1:], set())
    if any(_defined(x) in args for x in pure):
        return None
    taken = []
    for val in (0, 1):
        env = {p: val}
        for x in pure:
            if not _eval_pure(x, env):
                return None
        c = env.get(s.cond.name)
        if c is None:
            return None
        taken.append(bool(c) ^ s.negated)
    if taken[0] == taken[1]:
        return None
    fail, ok = (s.then, s.orelse) if taken[0] else (s.orelse, s.then)
    if ok or not fail:
        return None
    # the fallback: pure register ops (CUTLASS moves its suspend-time hint into a register)
    # whose results nothing after it reads, then the blocking wait
    setup, w = fail[:-1], fail[-1]
    if not all(isinstance(x, Instr) and x.guard is None and x.supported and x.operands
               and semantics_of(x) in _PURE and _defined(x) is not None for x in setup):
        return None
    if any(_defined(x) in args or _reads(rest, _defined(x)) for x in setup):
        return None
    n = len(peek.operands)
    # the same opcode, barrier and phase; the fallback may add the optional suspend-time hint
    # operand (PTX ISA 9.7.13.15.16: ``try_wait waitComplete, [addr], phase {, suspendTimeHint}``),
    # which bounds how long one try waits, not what it waits for
    if not (isinstance(w, Instr) and w.blocking and w.guard is None and w.op == peek.op
            and w.mods == peek.mods and w.operands[1:n] == peek.operands[1:]
            and len(w.operands) - n in (0, 1) and isinstance(w.operands[0], Reg)):
        return None
    if _reads(rest, w.operands[0].name):
        return None
    return True

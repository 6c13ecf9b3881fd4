"""The pointer parameter a global access's address is derived from, for the run's bounds check.

Global buffers are laid out one after another with red zones between them
(``kverify.launch.layout.RED_ZONE``): an overflow of one buffer by more than a red zone lands in
the next, inside an allocation, and "outside every allocation" does not see it. Where the address
of a ``ld``/``st``/``atom``/``red`` in the kernel's body is derived from exactly one pointer
parameter, the access must also lie inside that parameter's buffer; where a shared access's address
is derived from one shared variable (``mov`` of its address), inside that variable.

Derived, flow-insensitively over the kernel's body (device functions keep their own registers
and are not followed): ``ld.param`` of the parameter; ``mov``, ``cvta`` of a derived register;
``add`` of a derived register and an underived one, ``sub`` of an underived one from a derived
one, ``mad`` with a derived addend, ``and`` of a derived register with an immediate (alignment).
A register written anywhere else, or by two instructions that derive it from different
parameters, is not derived from any (``pointer - pointer``, a pointer loaded from memory, a
``selp`` between buffers): its accesses keep the allocation check only.
"""
from __future__ import annotations

from kverify.semantics.ir.nodes import Addr, Imm, Reg, Sym
from kverify.semantics.ir.optable import memory_access, space_of
from kverify.semantics.ir.visit import instructions

_NONE = ""  # a register no single parameter derives
SHARED = "shared:"  # the prefix of a shared variable's name among the bases


def pointer_bases(kernel, shared_vars=()) -> dict:
    """``{id(instr): PTX parameter name}`` for the global (or generic) memory instructions of
    ``kernel``'s body whose address register is derived from one pointer parameter, and
    ``{id(instr): SHARED + variable}`` for the shared ones derived from one of ``shared_vars``
    (``mov`` of the variable's address)."""
    body = list(instructions(kernel.body))
    params = {p.name for p in kernel.params} | {SHARED + v for v in shared_vars}
    written = {i.operands[0].name for i in body if i.operands and isinstance(i.operands[0], Reg)}
    base: dict = {}  # written register -> parameter name or _NONE (absent: not known yet)

    def of(op):  # a register nothing writes (a special register) derives nothing
        return (base.get(op.name) if op.name in written else _NONE) if isinstance(op, Reg) else _NONE

    changed = True
    while changed:  # to a fixpoint (loop-carried registers: a definition after its use in the text)
        changed = False
        for ins in body:
            if not ins.operands or not isinstance(ins.operands[0], Reg):
                continue
            got = _derive(ins, ins.operands[1:], of, params)
            dst = ins.operands[0].name
            old = base.get(dst)
            new = got if old is None else old if got is None or got == old else _NONE
            if new is not None and new != old:
                base[dst] = new
                changed = True
    out = {}
    for ins in body:
        if memory_access(ins) not in ("load", "store", "update"):
            continue
        shared = (space_of(ins) or "").startswith("shared")
        if not shared and space_of(ins) not in (None, "global", "generic"):
            continue
        addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
        b = of(addr.base) if addr is not None and isinstance(addr.base, Reg) else None
        if b and b.startswith(SHARED) == (shared and space_of(ins) != "shared::cluster"):
            out[id(ins)] = b
    return out


def _derive(ins, srcs, of, params):
    """The parameter the destination of ``ins`` is derived from, ``_NONE`` for none, ``None``
    while a source register is not known yet."""
    op = ins.op
    if memory_access(ins) == "load" and space_of(ins) == "param" and len(srcs) == 1 and isinstance(srcs[0], Addr) \
            and isinstance(srcs[0].base, Sym) and srcs[0].base.name in params and srcs[0].offset == 0 \
            and any(m in ("u64", "s64", "b64") for m in ins.mods):
        return srcs[0].base.name
    if op == "mov" and len(srcs) == 1 and isinstance(srcs[0], Sym) and SHARED + srcs[0].name in params:
        return SHARED + srcs[0].name
    kinds = [of(x) for x in srcs]
    if any(k is None for k in kinds):
        return None
    if op == "cvta" and any(k.startswith(SHARED) for k in kinds if k):  # a generic address: not followed
        return _NONE
    if op in ("mov", "cvta") and len(srcs) == 1:
        return kinds[0]
    derived = [k for k in kinds if k]
    if op == "add" and len(srcs) == 2 and len(derived) == 1:
        return derived[0]
    if op == "sub" and len(srcs) == 2 and kinds[0] and not kinds[1]:
        return kinds[0]
    if op == "mad" and len(srcs) == 3 and kinds[2] and not kinds[0] and not kinds[1]:
        return kinds[2]
    if op == "and" and len(srcs) == 2 and kinds[0] and isinstance(srcs[1], Imm):
        return kinds[0]
    return _NONE

"""Structural visitors and mappers over statement trees."""
from __future__ import annotations

from collections import Counter
from dataclasses import fields, is_dataclass, replace
from typing import Callable, Iterator

from .nodes import Addr, Block, If, Imm, Instr, Kernel, Label, Loop, Module, Reg, Sym
from .optable import flow_of, param_access, semantics_of
from .symint import SymInt


def walk(stmts, depth: int = 0, loops: tuple = ()) -> Iterator[tuple]:
    """Yield ``(stmt, loops)`` for every statement in pre-order; ``loops`` is the tuple of
    enclosing ``Loop`` nodes, outermost first."""
    for s in stmts:
        yield s, loops
        if isinstance(s, If):
            yield from walk(s.then, depth + 1, loops)
            yield from walk(s.orelse, depth + 1, loops)
        elif isinstance(s, Loop):
            yield from walk(s.body, depth + 1, loops + (s,))
        elif isinstance(s, Block):
            yield from walk(s.body, depth + 1, loops)


def instructions(stmts) -> Iterator[Instr]:
    for s, _ in walk(stmts):
        if isinstance(s, Instr):
            yield s


def map_stmts(stmts, f: Callable) -> tuple:
    """Rebuild a statement tree bottom-up; ``f(stmt)`` returns a statement, a tuple/list of
    statements (spliced in), or ``None`` (dropped)."""
    out = []
    for s in stmts:
        if isinstance(s, If):
            s = replace(s, then=map_stmts(s.then, f), orelse=map_stmts(s.orelse, f))
        elif isinstance(s, (Loop, Block)):
            s = replace(s, body=map_stmts(s.body, f))
        r = f(s)
        if r is None:
            continue
        if isinstance(r, (tuple, list)):
            out.extend(r)
        else:
            out.append(r)
    return tuple(out)


def map_instrs(kernel: Kernel, f: Callable[[Instr], object]) -> Kernel:
    return replace(kernel, body=map_stmts(kernel.body, lambda s: f(s) if isinstance(s, Instr) else s))


def substitute_params(module: Module, kernel: Kernel, values: dict) -> Kernel:
    """Specialize a kernel: every ``ld.param`` of a parameter in ``values`` (keyed by PTX
    or CUDA name) becomes a ``mov`` of the constant, and every symbolic expression (loop
    induction variables, trip counts) is re-simplified with the parameter replaced."""
    by_name = {}
    for p in kernel.params:
        for key in (p.name, p.source_name):
            if key is not None and key in values:
                by_name[p.name] = int(values[key])

    def ins(i: Instr):
        if param_access(i) == "load" and len(i.operands) == 2:
            a = i.operands[1]
            if isinstance(a, Addr) and isinstance(a.base, Sym) and a.base.name in by_name and a.offset == 0:
                ty = i.types()[-1]
                return replace(i, op="mov", mods=(ty,), operands=(i.operands[0], Imm(by_name[a.base.name])))
        return i

    def stmt(s):
        if isinstance(s, Instr):
            return ins(s)
        if isinstance(s, Loop):
            ivs = tuple(replace(iv, init=iv.init.subs(by_name), step=iv.step.subs(by_name)) for iv in s.ivs)
            trip = s.trip_count.subs(by_name) if isinstance(s.trip_count, SymInt) else s.trip_count
            return replace(s, ivs=ivs, trip_count=trip)
        return s

    return replace(kernel, body=map_stmts(kernel.body, stmt))


class RegisterWidths:
    """Bit width of every register of a module's functions (1 for ``.pred``), from their
    ``.reg`` declarations; ``%r<54>`` declares ``%r0`` .. ``%r53``. Unknown names are 64."""

    def __init__(self, module):
        self.exact, self.prefix = {}, {}
        for k in module.kernels:
            for r in k.regs:
                bits = 1 if getattr(r.type, "name", None) == "pred" else r.type.bits
                (self.prefix if r.count is not None else self.exact)[r.name] = bits

    def __call__(self, name: str) -> int:
        b = self.exact.get(name)
        if b is None:
            b = self.exact[name] = self.prefix.get(name.rstrip("0123456789"), 64)
        return b


def callee_of(module, instr):
    """The module function a ``call`` names, or ``None`` (a call through a register)."""
    names = {o.name for o in instr.operands if isinstance(o, Sym)}
    return next((f for f in module.kernels if f.name in names), None)


def is_indirect_call(instr) -> bool:
    """A ``call`` through a register (a C++ function pointer), PTX ISA §9.7.12.5."""
    return flow_of(instr) == "call" and any(isinstance(o, Reg) for o in instr.operands)


def prototype_of(kernel, instr):
    """The ``.callprototype`` (of ``kernel``, the function containing the call) an
    indirect ``call`` names, or ``None``."""
    names = {o.name for o in instr.operands if isinstance(o, Label)}
    return next((p for p in kernel.protos if p.name in names), None)


def address_taken(module) -> list:
    """The ``.func`` definitions whose address the module takes: a ``Sym`` operand naming
    one outside a ``call``'s callee slot (``mov.u64 %rd, f;``) or a module variable's
    initializer naming one (``.global .u64 table[2] = {f, g};``)."""
    funcs = {k.name: k for k in module.kernels if not k.is_entry}
    taken = {x.name for v in module.vars for x in (v.init or ()) if isinstance(x, Sym)}
    for k in module.kernels:
        for i in instructions(k.body):
            if flow_of(i) == "call":
                continue
            for o in i.operands:
                if isinstance(o, Sym) and o.name in funcs:
                    taken.add(o.name)
    return [funcs[n] for n in funcs if n in taken]


def indirect_targets(module, kernel, instr) -> list:
    """The functions an indirect ``call`` of ``kernel`` may reach: those whose address is
    taken and whose signature matches the call's prototype (PTX ISA §9.7.12.5: calling
    through a pointer a function of another signature is undefined)."""
    proto = prototype_of(kernel, instr)
    return [f for f in address_taken(module) if proto is None or proto.matches(f)]


def reachable_functions(module, kernel) -> Iterator[Kernel]:
    """``kernel`` and every module function it calls, directly or not (through a function
    pointer: every ``indirect_targets``), each once."""
    seen, todo = set(), [kernel]
    while todo:
        k = todo.pop()
        if k.name in seen:
            continue
        seen.add(k.name)
        yield k
        for i in instructions(k.body):
            if flow_of(i) == "call":
                callee = callee_of(module, i)
                if callee is not None:
                    todo.append(callee)
                elif not any(isinstance(o, Sym) for o in i.operands):  # through a register
                    todo.extend(indirect_targets(module, k, i))


def reachable_instructions(module, kernel) -> Iterator[Instr]:
    """Every instruction of ``kernel`` and of the functions it calls, each function once."""
    for k in reachable_functions(module, kernel):
        yield from instructions(k.body)


def names_of(obj, cls, out: list | None = None) -> list:
    """The ``name`` of every ``cls`` node (``Reg``, ``Sym``) inside ``obj``: operands,
    statements, tuples of them."""
    out = [] if out is None else out
    if isinstance(obj, cls):
        out.append(obj.name)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            names_of(x, cls, out)
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            names_of(getattr(obj, f.name), cls, out)
    return out


def unread_atomic_results(module, kernel) -> set:
    """Destination registers of ``atom`` that no statement of the kernel or its callees
    mentions anywhere else (the returned old value is discarded)."""
    names: list = []
    dests: list = []
    for k in reachable_functions(module, kernel):
        names_of(k.body, Reg, names)
        dests += [i.operands[0].name for i in instructions(k.body)
                  if semantics_of(i) == "atom" and i.operands and isinstance(i.operands[0], Reg)]
    total, as_dest = Counter(names), Counter(dests)
    return {r for r, n in as_dest.items() if total[r] == n}

"""Core IR nodes: small frozen dataclasses, one per construct.

A ``Module`` holds kernels (``.entry``) and device functions (``.func``). A kernel's body is
*structured*: ``Instr`` plus ``If``, ``Loop`` (``for`` when an induction variable was
recognized, ``while`` otherwise), labelled ``Block`` with ``Break``/``Continue`` for the
remaining forward and backward edges (the shape every reducible CFG structures into).
Every node carries a ``Loc``: the kernel source position when known (CUDA line from
``.loc``) and the PTX line it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

from .printer import Printer
from .symint import SymInt
from .types import Pointer, Scalar, Vector

Type = Union[Scalar, Vector, Pointer]


@dataclass(frozen=True, slots=True)
class Loc:
    """Where a node came from: ``file:line:col`` of the kernel source (CUDA, Python for
    Triton, or the PTX itself when no ``.loc`` applies) and the PTX line."""

    file: str | None = None
    line: int = 0
    col: int = 0
    ptx_line: int = 0

    def __str__(self) -> str:
        return where(self, detail=True)


NOLOC = Loc()


def where(x, detail: bool = False) -> str:
    """The one formatter of a source position (``x`` is a ``Loc``, anything with a ``loc``
    such as an instruction, or None). Short form, for messages: ``file:line`` where the
    kernel's source is known, else ``ptx line N``. With ``detail``: ``file:line:col (ptx N)``,
    leaving out a zero column and the PTX line of a position that is the PTX file's own."""
    loc = x if isinstance(x, Loc) else getattr(x, "loc", None)
    if loc is None:
        return "?"
    if not loc.line:
        return f"ptx line {loc.ptx_line}" if loc.ptx_line else "?"
    s = f"{loc.file or '?'}:{loc.line}"
    if detail:
        if loc.col:
            s += f":{loc.col}"
        if loc.ptx_line and not (loc.ptx_line == loc.line and str(loc.file or "").endswith(".ptx")):
            s += f" (ptx {loc.ptx_line})"
    return s

# --------------------------------------------------------------------------- operands


@dataclass(frozen=True, slots=True)
class Reg:
    """A register, e.g. ``%r1``, or a special register such as ``%tid.x``."""

    name: str

    @property
    def is_special(self) -> bool:
        from .optable import SPECIAL_REGISTERS

        return self.name.split(".")[0] in SPECIAL_REGISTERS

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Imm:
    """An integer immediate."""

    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class FImm:
    """A floating-point immediate as its IEEE bit pattern (``0f...`` is 32-bit, ``0d...``
    64-bit)."""

    bits: int
    width: int

    def __str__(self) -> str:
        return f"0f{self.bits:08X}" if self.width == 32 else f"0d{self.bits:016X}"


@dataclass(frozen=True, slots=True)
class Sym:
    """A named address or value: a variable, a kernel parameter or a function, with an
    optional byte offset (``smem+16``)."""

    name: str
    offset: int = 0

    def __str__(self) -> str:
        if not self.offset:
            return self.name
        return f"{self.name}+{self.offset}" if self.offset > 0 else f"{self.name}-{-self.offset}"


@dataclass(frozen=True, slots=True)
class GenericOf(Sym):
    """``generic(x)`` in a variable's initializer: the generic address of variable ``x``."""

    def __str__(self) -> str:
        return f"generic({Sym.__str__(self)})"


@dataclass(frozen=True, slots=True)
class Label:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Sink:
    """The bit bucket ``_``."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True, slots=True)
class Neg:
    """A negated predicate operand ``!%p``."""

    reg: Reg

    def __str__(self) -> str:
        return f"!{self.reg}"


@dataclass(frozen=True, slots=True)
class Addr:
    """``[base+offset]``; base is a register, a symbol or ``None`` for an absolute
    address. ``coords`` holds the tensor coordinates of ``[tmap, {x, y}]``."""

    base: Union[Reg, Sym, None]
    offset: int = 0
    coords: tuple = ()

    def __str__(self) -> str:
        if self.base is None:
            inner = str(self.offset)
        elif self.offset:
            inner = f"{self.base}+{self.offset}" if self.offset > 0 else f"{self.base}+{self.offset}"
        else:
            inner = str(self.base)
        if self.coords:
            inner += ", {" + ", ".join(str(c) for c in self.coords) + "}"
        return f"[{inner}]"


@dataclass(frozen=True, slots=True)
class VecOp:
    """A vector operand ``{a, b, c, d}``."""

    elems: tuple

    def __str__(self) -> str:
        return "{" + ", ".join(str(e) for e in self.elems) + "}"


@dataclass(frozen=True, slots=True)
class PairOp:
    """Two destinations ``%p|%q`` (``setp`` with a complement, ``elect.sync``)."""

    first: object
    second: object

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True, slots=True)
class ParenList:
    """``(a, b)`` argument/return lists of ``call``."""

    elems: tuple

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elems) + ")"


Operand = Union[Reg, Imm, FImm, Sym, Label, Sink, Neg, Addr, VecOp, PairOp, ParenList]


def operand_regs(op) -> Iterator[Reg]:
    """Registers mentioned anywhere inside an operand."""
    if isinstance(op, Reg):
        yield op
    elif isinstance(op, Neg):
        yield op.reg
    elif isinstance(op, Addr):
        if isinstance(op.base, Reg):
            yield op.base
        for c in op.coords:
            yield from operand_regs(c)
    elif isinstance(op, (VecOp, ParenList)):
        for e in op.elems:
            yield from operand_regs(e)
    elif isinstance(op, PairOp):
        yield from operand_regs(op.first)
        yield from operand_regs(op.second)


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Guard:
    """``@%p`` or ``@!%p``."""

    reg: Reg
    negated: bool = False

    def __str__(self) -> str:
        return f"@{'!' if self.negated else ''}{self.reg}"


def _text(node) -> str:
    """The IR text of a statement, kernel or module (``str()`` is the printer: what a
    debugger shows is what ``kverify show`` prints and ``parse_ir`` reads back)."""
    p = Printer(with_locs=False)
    if isinstance(node, Module):
        return p.module(node)
    if isinstance(node, Kernel):
        return "\n".join(p.kernel(node))
    return "\n".join(p.stmts((node,), 0))


_OPS = None  # the op table and the scalar types, bound on first use (optable imports this module)
_SCALAR_BITS = None


def _tables():
    global _OPS, _SCALAR_BITS
    from .optable import OPS
    from .types import SCALAR_BITS

    _OPS, _SCALAR_BITS = OPS, SCALAR_BITS
    return _OPS, _SCALAR_BITS


@dataclass(frozen=True, slots=True)
class Instr:
    """One PTX instruction: the op-table family ``op`` (e.g. ``mbarrier.try_wait``), its
    modifiers in source order, operands, an optional guard predicate.

    ``blocking`` marks a ``try_wait``/``test_wait`` whose retry loop was recognized: it
    stands for "wait until the phase completes"; on an ``atom.add``, the grid-barrier spin
    after it (``grid_barrier.py``): "then wait until the top bit of the location flips". ``supported`` is False for an instruction
    the op table does not know (or a known family with a modifier the table does not
    list); every analysis then treats it conservatively and reports ``unknown``.
    """

    op: str
    mods: tuple = ()
    operands: tuple = ()
    guard: Guard | None = None
    loc: Loc = NOLOC
    blocking: bool = False
    supported: bool = True

    @property
    def opcode(self) -> str:
        return ".".join((self.op,) + self.mods)

    @property
    def row(self):
        return (_OPS or _tables()[0]).get(self.op)

    def mod_set(self) -> frozenset:
        return frozenset(self.mods)

    def types(self) -> tuple:
        """The type modifiers in source order (``cvt.rn.f32.s32`` -> ``('f32', 's32')``)."""
        bits = _SCALAR_BITS or _tables()[1]
        return tuple(m for m in self.mods if m in bits)

    __str__ = _text


@dataclass(frozen=True, slots=True)
class If:
    """``if (cond) then else``; ``negated`` means the condition is ``!cond``."""

    cond: Reg
    negated: bool
    then: tuple
    orelse: tuple = ()
    loc: Loc = NOLOC

    __str__ = _text


@dataclass(frozen=True, slots=True)
class InductionVar:
    """A register stepped by a loop-invariant amount once per iteration: its value in
    iteration ``k`` (from 0) is ``init + k*step``. ``init`` and ``step`` are symbolic in the
    kernel's parameters and special registers when the front end could resolve them."""

    reg: Reg
    init: SymInt
    step: SymInt

    def __str__(self) -> str:
        return f"{self.reg} = {self.init} step {self.step}"


@dataclass(frozen=True, slots=True)
class Loop:
    """A natural loop. Falling off the end of ``body`` leaves the loop; ``Continue(label)``
    starts the next iteration. ``kind`` is ``for`` when induction variables and a trip
    count were recognized, else ``while``."""

    label: str
    body: tuple
    ivs: tuple = ()
    trip_count: SymInt | None = None
    loc: Loc = NOLOC
    # the branch back to the header (the loop statement's line, where known): for messages only,
    # not part of the IR (not in its text, not compared)
    back_loc: Loc = field(default=NOLOC, compare=False)

    @property
    def kind(self) -> str:
        return "for" if self.ivs else "while"

    __str__ = _text


@dataclass(frozen=True, slots=True)
class Block:
    """A labelled block; ``Break(label)`` jumps to just after it."""

    label: str
    body: tuple
    loc: Loc = NOLOC

    __str__ = _text


@dataclass(frozen=True, slots=True)
class Break:
    label: str
    loc: Loc = NOLOC

    __str__ = _text


@dataclass(frozen=True, slots=True)
class Continue:
    label: str
    loc: Loc = NOLOC

    __str__ = _text


Stmt = Union[Instr, If, Loop, Block, Break, Continue]

# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class Param:
    """A ``.param`` of a kernel or function. ``array`` is the element count of
    ``.b8 p[128]`` (a by-value tensor map), ``ptr`` the pointed-to space when declared
    ``.ptr.global``. ``source_name`` is the CUDA parameter name when known."""

    name: str
    type: Scalar
    align: int | None = None
    array: int | None = None
    ptr: Pointer | None = None
    source_name: str | None = None

    @property
    def size(self) -> int:
        return self.type.bits // 8 * (self.array or 1)


@dataclass(frozen=True, slots=True)
class RegDecl:
    """``.reg .b32 %r<54>;`` (count) or ``.reg .pred p;`` (count ``None``)."""

    type: Union[Scalar, Vector]
    name: str
    count: int | None = None


@dataclass(frozen=True, slots=True)
class VarDecl:
    """A variable in a state space: ``.shared .align 8 .b8 smem[1024];``; ``extern`` for
    ``.extern .shared`` (dynamic shared memory, size 0). ``dims`` are the array
    dimensions, ``None`` for ``[]``. ``init`` holds the initializer's elements: integers (a float's
    bits in the variable's format), ``Sym`` / ``GenericOf`` for the addresses it names."""

    space: str
    type: Union[Scalar, Vector]
    name: str
    align: int | None = None
    dims: tuple = ()
    extern: bool = False
    linkage: str | None = None  # visible / extern / weak / common
    init: tuple | None = None
    loc: Loc = field(default=NOLOC, compare=False)

    @property
    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d or 0
        return self.type.bits // 8 * n


@dataclass(frozen=True, slots=True)
class CallPrototype:
    """``name: .callprototype (rets) _ (params);`` (PTX ISA §11.6.2): the signature an
    indirect ``call`` through a function pointer names; parameter names are ``_``."""

    name: str
    rets: tuple
    params: tuple
    loc: Loc = field(default=NOLOC, compare=False)

    def matches(self, fn) -> bool:
        """Whether function ``fn`` has this signature (the same number of parameters and
        return values, each of the same size)."""
        return (len(fn.params) == len(self.params) and len(fn.rets) == len(self.rets)
                and all(a.size == b.size for a, b in zip(fn.params, self.params))
                and all(a.size == b.size for a, b in zip(fn.rets, self.rets)))


@dataclass(frozen=True, slots=True)
class Kernel:
    """A ``.entry`` (``is_entry``) or ``.func``. ``directives`` keeps performance
    directives such as ``('reqntid', (128, 1, 1))``; ``protos`` the ``.callprototype``
    declarations of its body."""

    name: str
    params: tuple
    body: tuple
    regs: tuple = ()
    vars: tuple = ()
    rets: tuple = ()
    is_entry: bool = True
    linkage: str | None = "visible"
    directives: tuple = ()
    loc: Loc = field(default=NOLOC, compare=False)
    protos: tuple = ()

    def directive(self, name: str):
        for k, v in self.directives:
            if k == name:
                return v
        return None

    @property
    def block_dim(self) -> tuple | None:
        """``(x, y, z)`` from ``.reqntid`` or, failing that, ``.maxntid``."""
        v = self.directive("reqntid") or self.directive("maxntid")
        return tuple(v) + (1,) * (3 - len(v)) if v else None

    def param(self, key) -> Param:
        if isinstance(key, int):
            return self.params[key]
        for p in self.params:
            if key in (p.name, p.source_name):
                return p
        raise KeyError(key)

    __str__ = _text


@dataclass(frozen=True, slots=True)
class Module:
    """A PTX module: header directives, module-scope variables, kernels and functions.
    ``files`` maps ``.file`` indices to paths."""

    version: str
    target: tuple
    address_size: int
    kernels: tuple
    vars: tuple = ()
    files: tuple = ()
    path: str | None = None

    def kernel(self, name: str | None = None) -> Kernel:
        entries = [k for k in self.kernels if k.is_entry]
        if name is None:
            if len(entries) != 1:
                names = ", ".join(k.name for k in entries) or "none"
                raise KeyError(f"the module has {len(entries)} kernels ({names}); name one with --kernel")
            return entries[0]
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} in this module (kernels: {', '.join(k.name for k in entries) or 'none'})")

    __str__ = _text

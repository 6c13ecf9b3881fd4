"""One IR instruction -> one CUDA statement: an ``asm volatile`` that reproduces the PTX
instruction text, with registers bound through constraints.

Rules (the op table row gives each operand slot's access):

* a register read is an input (``"r"(r1)``), one written an output (``"=r"``), one both
  read and written, or written under a guard, is ``"+r"`` so a false guard keeps its value;
* predicates have no constraint: each predicate register is an ``unsigned`` 0/1 in C and a
  ``.reg .pred`` local of the asm statement, set from the value with ``setp.ne.b32`` when
  read and written back with ``selp.u32`` when written; a guard ``@%p`` is such a local;
* special registers (``%tid.x``) stay in the text (``%%tid.x``);
* a symbol is bound as an input: a shared variable's shared-window address
  (``__cvta_generic_to_shared``) where the instruction names a shared state space or reads
  the address with ``mov``/``cvta``, else its generic address; kernel parameters keep their
  PTX names, which the lowered ``extern "C"`` kernel reproduces;
* ``ld.param``/``st.param`` on device-function parameters and call-sequence ``.param``
  variables are C moves, ``call`` is a C call, ``ret``/``exit`` are ``return``;
* a blocking ``try_wait``/``test_wait`` (its retry loop folded by the front end) becomes
  the retry loop again: ``do { asm(...) } while (!p);``; a blocking ``atom.add`` (cooperative
  groups' grid barrier, ``grid_barrier.py``) becomes the atomic and its spin again: an acquiring
  load of the same word, at the atomic's scope, until its top bit differs from the returned value's;
* an instruction the op table does not know (``supported`` False) is emitted as written,
  every register it mentions bound ``"+"`` and with a ``"memory"`` clobber.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kverify.semantics.ir.nodes import (Addr, FImm, Imm, Instr, Label, Neg, PairOp, ParenList, Reg,
                                Sink, Sym, VecOp)
from kverify.semantics.ir.optable import (OPS, flow_of, is_polling_wait, leaves_function, memory_slot,
                                          operand_bits, param_access, semantics_of)
from kverify.semantics.ir.types import Scalar

from .ctype import LoweringError, reg_ctype, value_ctype

#: Families whose operands carry no memory or ordering effect: they get no ``"memory"``
#: clobber (every asm statement is ``volatile``, so none is dropped or reordered among
#: the others).
PURE_FAMILIES = frozenset(
    r.mnemonic for r in OPS.values()
    if r.semantics and r.space is None and r.proxy is None and r.sync is None)


@dataclass(frozen=True)
class SymInfo:
    """What a symbol names in the function being lowered.

    ``kind``: ``shared`` / ``global`` / ``const`` / ``local`` (a variable), ``kparam`` (an
    entry parameter, referenced by its PTX name), ``kparam_c`` (an entry parameter bound
    through C), ``cparam`` (a device-function parameter or return slot, or a call-site
    ``.param`` variable: C storage), ``func`` (a device function)."""

    kind: str
    cname: str
    decl: object = None


class Scope:
    """Names visible to one function: registers, variables, parameters, functions."""

    def __init__(self, regs: dict, syms: dict, in_entry: bool, funcs: dict):
        self.regs = regs  # PTX name -> (C name, Scalar)
        self.syms = syms  # PTX name -> SymInfo
        self.in_entry = in_entry
        self.funcs = funcs  # PTX name -> Kernel (device functions of the module)

    def reg(self, r: Reg, instr) -> tuple[str, Scalar]:
        try:
            return self.regs[r.name]
        except KeyError:
            raise LoweringError(f"register {r.name} is used but not declared", instr.loc) from None

    def sym(self, s: Sym, instr) -> SymInfo:
        try:
            return self.syms[s.name]
        except KeyError:
            raise LoweringError(f"{instr.opcode}: unknown symbol {s.name}", instr.loc) from None


def _cstr(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _slot_access(instr: Instr) -> list[str] | None:
    """The access (def/use/update/...) of each operand position, or ``None`` when the
    row does not describe this operand list (then everything is treated as read+written)."""
    row = OPS.get(instr.op)
    if row is None or not instr.supported:
        return None
    n = len(instr.operands)
    if n < row.min_operands or (row.max_operands is not None and n > row.max_operands):
        return None
    slots = list(row.operands)
    out = []
    for k in range(n):
        if k < len(slots):
            s = slots[k]
        else:
            s = slots[-1]
        out.append(s.access)
    return out


@dataclass
class _Binding:
    cname: str
    constraint: str  # letter
    read: bool = False
    write: bool = False
    pred: bool = False
    local: str | None = None  # .reg .pred name inside the asm
    token: str = ""


@dataclass
class AsmStmt:
    """Builder of one ``asm volatile`` statement."""

    scope: Scope
    instr: Instr
    bindings: dict = field(default_factory=dict)  # reg name -> _Binding
    inputs: list = field(default_factory=list)  # (constraint, c expr) of non-register inputs
    npred: int = 0

    # ---- register bookkeeping -------------------------------------------------------
    def _note(self, r: Reg, write: bool, read: bool):
        if r.is_special:
            return
        b = self.bindings.get(r.name)
        if b is None:
            cname, t = self.scope.reg(r, self.instr)
            _, letter = reg_ctype(t)
            b = _Binding(cname, letter, pred=t.name == "pred")
            if b.pred:
                b.local = f"%%kvp{self.npred}"
                self.npred += 1
            b.token = f"\x00R{len(self.bindings)}\x00"
            self.bindings[r.name] = b
        b.read |= read
        b.write |= write

    def _collect(self, op, access: str):
        if isinstance(op, Reg):
            if access == "def":
                self._note(op, write=True, read=False)
            elif access in ("update", "rw"):
                self._note(op, write=True, read=True)
            else:
                self._note(op, write=False, read=True)
        elif isinstance(op, Neg):
            self._note(op.reg, write=False, read=True)
        elif isinstance(op, (VecOp, ParenList)):
            for e in op.elems:
                self._collect(e, access)
        elif isinstance(op, PairOp):
            self._collect(op.first, access)
            self._collect(op.second, access)
        elif isinstance(op, Addr):
            if isinstance(op.base, Reg):
                self._note(op.base, write=False, read=True)
            for c in op.coords:
                self._collect(c, "use")

    # ---- symbols --------------------------------------------------------------------
    _SPACE_OF_KIND = {"shared": "shared", "global": "global", "const": "const", "local": "local"}

    def _own_space(self, kind: str) -> bool:
        """Whether a variable symbol stands for its address in its own state space (``mov``,
        ``cvta.shared``, an instruction naming that space) rather than its generic address."""
        i = self.instr
        sem = semantics_of(i)
        if sem == "mov":
            return True
        if sem == "cvta":
            return "to" not in i.mods
        space = self._SPACE_OF_KIND[kind]
        return any(m == space or m.startswith(space + "::") for m in i.mods)

    def _sym_text(self, s: Sym, in_addr: bool) -> str:
        info = self.scope.sym(s, self.instr)
        i = self.instr
        if info.kind == "kparam":
            return str(s)
        if info.kind not in self._SPACE_OF_KIND:
            raise LoweringError(f"{i.opcode}: cannot take the address of {s.name} in lowered "
                                f"CUDA", i.loc)
        if self._own_space(info.kind):
            conv = {"shared": "__cvta_generic_to_shared", "global": "__cvta_generic_to_global",
                    "const": "__cvta_generic_to_constant",
                    "local": "__cvta_generic_to_local"}[info.kind]
            expr = f"{conv}(&{info.cname})"
            # shared-window addresses are 32-bit unless a 64-bit mov/cvta asks for 64
            wide = info.kind != "shared"
        else:
            expr = f"&{info.cname}"
            wide = True
        if semantics_of(i) in ("mov", "cvta"):
            wide = operand_bits(i, 0) == 64
        if wide:
            cexpr = f"(unsigned long long)({expr})"
            letter = "l"
        else:
            cexpr = f"(unsigned)({expr})"
            letter = "r"
        if s.offset and not in_addr:
            cexpr = f"{cexpr} + ({s.offset})"
        token = f"\x00I{len(self.inputs)}\x00"
        self.inputs.append((letter, cexpr))
        if s.offset and in_addr:
            return token + (f"+{s.offset}" if s.offset > 0 else f"+{s.offset}")
        return token

    # ---- rendering --------------------------------------------------------------------
    def _text(self, op, in_addr: bool = False) -> str:
        if isinstance(op, Reg):
            if op.is_special:
                return "%" + op.name
            b = self.bindings[op.name]
            return b.local if b.pred else b.token
        if isinstance(op, Neg):
            return "!" + self._text(op.reg)
        if isinstance(op, (Imm, FImm, Sink)):
            return str(op)
        if isinstance(op, Sym):
            return self._sym_text(op, in_addr)
        if isinstance(op, Label):
            raise LoweringError(f"{self.instr.opcode}: a branch to {op.name} was left in the "
                                f"structured body", self.instr.loc)
        if isinstance(op, VecOp):
            return "{" + ", ".join(self._text(e) for e in op.elems) + "}"
        if isinstance(op, ParenList):
            return "(" + ", ".join(self._text(e) for e in op.elems) + ")"
        if isinstance(op, PairOp):
            return f"{self._text(op.first)}|{self._text(op.second)}"
        if isinstance(op, Addr):
            if op.base is None:
                inner = str(op.offset)
            else:
                base = self._text(op.base, in_addr=True)
                inner = f"{base}+{op.offset}" if op.offset else base
            if op.coords:
                inner += ", {" + ", ".join(self._text(c) for c in op.coords) + "}"
            return f"[{inner}]"
        raise LoweringError(f"{self.instr.opcode}: cannot lower operand {op!r}", self.instr.loc)

    def render(self, clobber_memory: bool | None = None) -> str:
        i = self.instr
        access = _slot_access(i)
        for k, op in enumerate(i.operands):
            self._collect(op, "rw" if access is None else access[k])
        if i.guard is not None:
            self._note(i.guard.reg, write=False, read=True)
            for b in self.bindings.values():
                if b.write:
                    b.read = True  # a false guard keeps the old value
        ops = ", ".join(self._text(o) for o in i.operands)
        core = i.opcode + (" " + ops if ops else "") + ";"
        if i.guard is not None:
            g = self.bindings.get(i.guard.reg.name)
            gtext = g.local if g is not None else "%" + i.guard.reg.name
            core = f"@{'!' if i.guard.negated else ''}{gtext} {core}"
        # number operands: outputs first (registers written), then inputs
        outs = [b for b in self.bindings.values() if b.write]
        ins = [b for b in self.bindings.values() if not b.write]
        number = {}
        out_list, in_list = [], []
        for b in outs:
            number[b.token] = len(out_list)
            out_list.append(f'"{"+" if b.read else "="}{b.constraint}"({b.cname})')
        n_out = len(out_list)
        for b in ins:
            number[b.token] = n_out + len(in_list)
            in_list.append(f'"{b.constraint}"({b.cname})')
        for k, (letter, cexpr) in enumerate(self.inputs):
            number[f"\x00I{k}\x00"] = n_out + len(in_list)
            in_list.append(f'"{letter}"({cexpr})')
        preds = [b for b in self.bindings.values() if b.pred]
        if preds:
            pre = [f".reg .pred {b.local};" for b in preds]
            pre += [f"setp.ne.b32 {b.local}, {b.token}, 0;" for b in preds if b.read]
            post = [f"selp.u32 {b.token}, 1, 0, {b.local};" for b in preds if b.write]
            text = "{ " + " ".join(pre + [core] + post) + " }"
        else:
            text = core
        for tok, n in number.items():
            text = text.replace(tok, f"%{n}")
        if clobber_memory is None:
            clobber_memory = not (i.supported and i.op in PURE_FAMILIES)
        parts = [_cstr(text), ", ".join(out_list), ", ".join(in_list)]
        if clobber_memory:
            parts.append('"memory"')
        return "asm volatile(" + " :".join(p if k == 0 else (" " + p if p else "")
                                           for k, p in enumerate(parts)) + ");"


# --------------------------------------------------------------------------- C-level ops


def _param_ref(scope: Scope, instr: Instr, addr) -> tuple[SymInfo, str]:
    """``(info, C byte pointer expression)`` for ``[sym+off]`` on C-bound parameter storage."""
    if not isinstance(addr, Addr) or not isinstance(addr.base, Sym):
        raise LoweringError(f"{instr.opcode}: only [symbol+offset] addressing of .param "
                            f"storage can be lowered", instr.loc)
    info = scope.sym(addr.base, instr)
    off = addr.offset + addr.base.offset
    ptr = f"(unsigned char*)&{info.cname}" + (f" + {off}" if off else "")
    return info, ptr


def _scalar_type(instr: Instr) -> Scalar:
    ts = instr.types()
    if not ts:
        raise LoweringError(f"{instr.opcode}: a type modifier is required", instr.loc)
    return Scalar(ts[-1])


def _vec(instr: Instr) -> int:
    for m in instr.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def param_move(scope: Scope, instr: Instr) -> list[str] | None:
    """``ld.param``/``st.param`` on C-bound storage as C moves, or ``None`` when the
    instruction addresses an entry parameter by its PTX name (emitted as inline asm)."""
    access = param_access(instr)
    if access not in ("load", "store"):
        return None
    slot = memory_slot(instr)
    addr = instr.operands[slot]
    if isinstance(addr, Addr) and isinstance(addr.base, Sym):
        info = scope.sym(addr.base, instr)
        if info.kind == "kparam":
            return None
    else:
        raise LoweringError(f"{instr.opcode}: .param access through a register cannot be "
                            f"lowered", instr.loc)
    if instr.guard is not None:
        raise LoweringError(f"{instr.opcode}: a guarded .param move cannot be lowered", instr.loc)
    _, ptr = _param_ref(scope, instr, addr)
    t = _scalar_type(instr)
    vt = value_ctype(t)
    size = max(t.bits // 8, 1)
    val = instr.operands[1 - slot]  # ld d, [a]; st [a], b
    elems = val.elems if isinstance(val, VecOp) else (val,)
    if len(elems) != _vec(instr):
        raise LoweringError(f"{instr.opcode}: operand count does not match the vector width",
                            instr.loc)
    out = []
    for k, e in enumerate(elems):
        p = f"{ptr} + {k * size}" if k else ptr
        if access == "load":
            if isinstance(e, Sink):
                continue
            if not isinstance(e, Reg):
                raise LoweringError(f"{instr.opcode}: destination must be a register", instr.loc)
            cname, rt = scope.reg(e, instr)
            rc, _ = reg_ctype(rt)
            if rt.bits == t.bits or (rt.name == "pred"):
                if rt.name == "pred":
                    out.append(f"{cname} = kv_ldp<{vt}>({p}) != 0;")
                else:
                    out.append(f"memcpy(&{cname}, {p}, {size});")
            else:
                out.append(f"{cname} = ({rc})kv_ldp<{vt}>({p});")
        else:
            if isinstance(e, Reg):
                cname, rt = scope.reg(e, instr)
                if rt.bits == t.bits:
                    out.append(f"memcpy({p}, &{cname}, {size});")
                else:
                    out.append(f"kv_stp<{vt}>({p}, ({vt}){cname});")
            elif isinstance(e, Imm):
                out.append(f"kv_stp<{vt}>({p}, ({vt})({e.value}LL));")
            elif isinstance(e, FImm):
                bits_t = "unsigned" if e.width == 32 else "unsigned long long"
                out.append(f"kv_stp<{bits_t}>({p}, {e.bits:#x}ULL);")
            else:
                raise LoweringError(f"{instr.opcode}: cannot store operand {e}", instr.loc)
    return out


def call_stmt(scope: Scope, instr: Instr) -> str:
    """``call (rets), f, (args);`` -> ``f(rets..., args...);`` over the call-site ``.param``
    variables (the lowered device function takes its return slots by reference)."""
    ops = list(instr.operands)
    rets: tuple = ()
    if ops and isinstance(ops[0], ParenList):
        rets = ops.pop(0).elems
    if not ops or not isinstance(ops[0], Sym):
        raise LoweringError(f"{instr.opcode}: only direct calls can be lowered", instr.loc)
    fn = scope.sym(ops.pop(0), instr)
    if fn.kind != "func":
        raise LoweringError(f"{instr.opcode}: {fn.cname} is not a device function", instr.loc)
    args: tuple = ()
    if ops and isinstance(ops[0], ParenList):
        args = ops.pop(0).elems
    if ops:
        raise LoweringError(f"{instr.opcode}: call prototypes / indirect calls cannot be lowered",
                            instr.loc)
    names = []
    for a in rets + args:
        if not isinstance(a, Sym):
            raise LoweringError(f"{instr.opcode}: call arguments must be .param variables",
                                instr.loc)
        info = scope.sym(a, instr)
        if info.kind != "cparam":
            raise LoweringError(f"{instr.opcode}: call argument {a.name} is not a .param variable",
                                instr.loc)
        names.append(info.cname)
    call = f"{fn.cname}({', '.join(names)});"
    if instr.guard is not None:
        c, _ = scope.reg(instr.guard.reg, instr)
        return f"if ({'!' if instr.guard.negated else ''}{c}) {call}"
    return call


def lower_instr(scope: Scope, instr: Instr) -> list[str]:
    """The C statements of one instruction."""
    g = ""
    if instr.guard is not None:
        c, _ = scope.reg(instr.guard.reg, instr)
        g = f"if ({'!' if instr.guard.negated else ''}{c}) "
    flow = flow_of(instr)
    if leaves_function(instr) and not instr.operands:
        if flow == "exit" and not scope.in_entry:
            return [AsmStmt(scope, instr).render(clobber_memory=True)]
        return [g + "return;"]
    if flow == "call":
        return [call_stmt(scope, instr)]
    if flow in ("branch", "branch.indirect"):
        raise LoweringError(f"{instr.opcode}: a branch was left in the structured body", instr.loc)
    moved = param_move(scope, instr)
    if moved is not None:
        return moved
    if instr.blocking and semantics_of(instr) == "atom":
        return [g + "{ " + _grid_barrier(scope, instr) + " }" if g else _grid_barrier(scope, instr)]
    if instr.blocking and is_polling_wait(instr):
        p = instr.operands[0] if instr.operands else None
        if not isinstance(p, Reg):
            raise LoweringError(f"{instr.opcode}: a blocking wait needs a predicate destination",
                                instr.loc)
        cname, _ = scope.reg(p, instr)
        stmt = AsmStmt(scope, instr).render()
        loop = f"do {{ {stmt} }} while (!{cname});"
        return [g + "{ " + loop + " }"] if g else [loop]
    return [AsmStmt(scope, instr).render()]


#: the C variable a lowered grid-barrier spin loads into
_SPIN = "%kv_spin"


def _grid_barrier(scope: Scope, instr: Instr) -> str:
    """``atom.add.release.gpu old, [A], inc`` marked blocking -> the atomic, then the spin the
    front end folded into it (``kverify.semantics.ir.grid_barrier``): load ``[A]`` with acquire at
    the atomic's scope until the top bits of the loaded and the returned values differ."""
    old, a = instr.operands[0], instr.operands[1]
    oname, oty = scope.reg(old, instr)
    space = tuple(m for m in instr.mods if m == "global")
    sc = tuple(m for m in instr.mods if m in ("gpu", "sys"))
    ctype, _ = reg_ctype(oty)
    scope.regs[_SPIN] = ("kv_spin", oty)
    try:
        load = AsmStmt(scope, Instr("ld", ("acquire",) + sc + space + ("u32",), (Reg(_SPIN), a),
                                    loc=instr.loc)).render(clobber_memory=True)
    finally:
        del scope.regs[_SPIN]
    atom = AsmStmt(scope, replace(instr, blocking=False)).render()
    return f"{{ {atom} {ctype} kv_spin; do {{ {load} }} while ((int)(kv_spin ^ {oname}) >= 0); }}"

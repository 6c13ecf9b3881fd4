"""Static audits of the kernel that runs (B7, B8, B10 of docs/validation.md).

* ``extern_calls``: ``call`` of a function the module does not define (a library routine:
  the candidate delegates the work). ``vprintf`` and ``__assertfail`` are allowed.
* ``store_dtypes``: the element type of every global store (``st``, ``atom``, ``red``)
  whose address the PTX traces back to one pointer parameter (through ``ld.param``,
  ``cvta``, ``mov``, ``add``/``sub``/``mad``/``selp``) must match that buffer's dtype:
  the same width, and a float store into the same float format. Stores whose address
  cannot be traced to one parameter are counted, not judged.
* ``precision_downgrades``: a narrowing float ``cvt`` (to f16, bf16, tf32, fp8, or f64 ->
  f32) or an ``mma``/``wgmma`` on a narrower format than any buffer of the launch holds:
  the kernel computes in less precision than its data (TF32 included).
* ``abi``: each launch value against the PTX ``.param`` list: pointers for buffers are
  64-bit parameters, integers fit the parameter's type, floats go to float parameters.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import Addr, Instr, Reg, Sym
from kverify.semantics.ir.optable import (collective_of, flow_of, memory_access, param_access,
                                          semantics_of, sync_of)
from kverify.semantics.ir.visit import instructions
from kverify.launch import dtypes, lookup, param_key
from . import rules as R

ALLOWED_EXTERN = frozenset({"vprintf", "__assertfail"})
_NARROW = {"f16": 16, "bf16": 16, "tf32": 19, "e4m3": 8, "e5m2": 8, "f16x2": 16, "bf16x2": 16,
           "e4m3x2": 8, "e5m2x2": 8, "f32": 32}
_FLOAT_RANK = {"f64": 64, "f32": 32, "tf32": 19, "f16": 16, "bf16": 16, "f16x2": 16, "bf16x2": 16,
               "e4m3": 8, "e5m2": 8, "e4m3x2": 8, "e5m2x2": 8}
#: Value semantics through which a register keeps pointing into the buffer its operand did.
_PROPAGATE = {"add", "sub", "mad", "mov", "cvta", "selp"}


def _float_format(dtype) -> str | None:
    """The PTX float type of a float buffer dtype (``float32`` -> ``f32``), else None."""
    r = dtypes.lookup(dtype)
    return r.ptx if r is not None and r.is_float else None


class AuditFinding(dict):
    """``{"rule", "message", "loc"}`` (a dict, so it serializes as it is)."""


def _loc(ins: Instr) -> dict:
    l = ins.loc
    return {"path": l.file, "line": l.line, "ptx_line": l.ptx_line}


def _functions(module, kernel):
    """The kernel and every function it calls, defined in the module."""
    by_name = {k.name: k for k in module.kernels}
    seen, todo = [], [kernel]
    while todo:
        k = todo.pop()
        if any(k is s for s in seen):
            continue
        seen.append(k)
        for i in instructions(k.body):
            if flow_of(i) == "call":
                for o in i.operands:
                    if isinstance(o, Sym) and o.name in by_name:
                        todo.append(by_name[o.name])
    return seen


def extern_calls(module, kernel, allowed=ALLOWED_EXTERN) -> list:
    defined = {k.name for k in module.kernels}
    out = []
    for k in _functions(module, kernel):
        for i in instructions(k.body):
            if flow_of(i) != "call":
                continue
            callee = next((o for o in i.operands if isinstance(o, Sym)), None)
            if callee is None:
                out.append(AuditFinding(rule=R.EXTERN_CALL.id, loc=_loc(i),
                                        message=f"{i.opcode}: indirect call (the callee cannot be audited)"))
            elif callee.name not in defined and callee.name not in allowed:
                out.append(AuditFinding(rule=R.EXTERN_CALL.id, loc=_loc(i),
                                        message=f"call of {callee.name}, which the module does not define (a library "
                                                f"routine outside the audited PTX)"))
    return out


def _provenance(kernel) -> dict:
    """``{register: frozenset(param names)}``: the pointer parameters a register may hold
    an address into (a fixpoint over the whole body, so loops are covered)."""
    prov: dict = {}
    instrs = list(instructions(kernel.body))
    params = {p.name for p in kernel.params}
    changed = True
    while changed:
        changed = False
        for i in instrs:
            if not i.operands or not isinstance(i.operands[0], Reg):
                continue
            d = i.operands[0].name
            new = set()
            sem = semantics_of(i)
            if param_access(i) == "load":
                a = i.operands[1]
                if isinstance(a, Addr) and isinstance(a.base, Sym) and a.base.name in params:
                    new.add(a.base.name)
            elif sem == "mov" and len(i.operands) > 1 and isinstance(i.operands[1], Sym) \
                    and i.operands[1].name in params:
                new.add(i.operands[1].name)
            elif sem in _PROPAGATE:
                for o in i.operands[1:]:
                    if isinstance(o, Reg):
                        new |= prov.get(o.name, frozenset())
            if new and not new <= prov.get(d, frozenset()):
                prov[d] = frozenset(prov.get(d, frozenset()) | new)
                changed = True
    return prov


def store_dtypes(module, kernel, spec) -> tuple[list, dict]:
    """Findings for stores whose type does not fit the buffer they write, and counts
    ``{"checked": n, "untraced": m}``."""
    prov = _provenance(kernel)
    dtype_of = {}
    for idx, p in enumerate(kernel.params):
        b = lookup(spec.buffers, kernel, idx)
        if b is not None:
            dtype_of[p.name] = (param_key(kernel, idx), b["dtype"])
    out, checked, untraced = [], 0, 0
    for i in instructions(kernel.body):
        access = memory_access(i)
        if access not in ("store", "update"):
            continue
        if any(m in i.mods for m in ("shared", "shared::cta", "shared::cluster", "local", "param")):
            continue
        a = next((o for o in i.operands if isinstance(o, Addr)), None)
        if a is None or not isinstance(a.base, Reg):
            untraced += 1
            continue
        ps = prov.get(a.base.name, frozenset()) & set(dtype_of)
        if len(ps) != 1:
            untraced += 1
            continue
        checked += 1
        name, dtype = dtype_of[next(iter(ps))]
        tys = i.types()
        if not tys:
            continue
        t = tys[-1]
        from kverify.semantics.ir.types import SCALAR_BITS

        w = SCALAR_BITS.get(t, 0)
        if t in ("f16x2", "bf16x2"):
            w = 16
        want = dtypes.dtype(dtype).bits
        fmt = _float_format(dtype)
        is_f = t.startswith(("f", "bf", "tf", "e4", "e5"))
        bad = None
        if w != want and not (access == "store" and w > want and w % want == 0 and t.startswith("b")):
            bad = f"stores .{t} ({w}-bit elements) into {name}, a {dtype} buffer"
        elif is_f and fmt is not None and t.replace("x2", "") != fmt:
            bad = f"stores .{t} values into {name}, a {dtype} buffer"
        elif is_f and fmt is None:
            bad = f"stores .{t} floats into {name}, a {dtype} buffer"
        if bad:
            out.append(AuditFinding(rule=R.STORE_DTYPE.id, loc=_loc(i), message=f"{i.opcode}: {bad}"))
    return out, {"checked": checked, "untraced": untraced}


def precision_downgrades(module, kernel, spec) -> list:
    present = {_float_format(b["dtype"]) for b in spec.buffers.values()}
    present |= {_float_format(t.get("dtype")) for t in spec.tensormaps.values()}
    present.discard(None)
    if not present:
        return []
    out = []
    for k in _functions(module, kernel):
        for i in instructions(k.body):
            tys = i.types()
            if semantics_of(i) == "cvt" and len(tys) >= 2:
                d, s = tys[0], tys[1]
                if d in _NARROW and s in _FLOAT_RANK and _FLOAT_RANK[s] > _NARROW[d] \
                        and d.replace("x2", "") not in present:
                    out.append(AuditFinding(
                        rule=R.PRECISION_DOWNGRADE.id, loc=_loc(i),
                        message=f"{i.opcode}: converts .{s} to .{d}, a narrower format than any buffer of the "
                                f"launch ({', '.join(sorted(present))})"))
            elif (collective_of(i) == "mma" or sync_of(i) == "wgmma.mma") and len(tys) >= 2:
                for t in tys[1:]:
                    if t in _NARROW and t != "f32" and t.replace("x2", "") not in present:
                        out.append(AuditFinding(
                            rule=R.PRECISION_DOWNGRADE.id, loc=_loc(i),
                            message=f"{i.opcode}: multiplies .{t} operands while the launch's buffers are "
                                    f"{', '.join(sorted(present))}"))
                        break
    return out


def _fits(v, tyname: str) -> bool:
    from kverify.semantics.ir.types import SCALAR_BITS

    bits = SCALAR_BITS.get(tyname, 64)
    if tyname.startswith("s"):
        return -(1 << (bits - 1)) <= v < (1 << (bits - 1))
    if tyname.startswith("u"):
        return 0 <= v < (1 << bits)
    return -(1 << (bits - 1)) <= v < (1 << bits)


def abi(kernel, spec) -> list:
    """Launch values against the PTX ``.param`` list (B10)."""
    out = []
    for idx, p in enumerate(kernel.params):
        name = param_key(kernel, idx)
        where = {"path": None, "line": 0, "ptx_line": kernel.loc.ptx_line}
        b = lookup(spec.buffers, kernel, idx)
        t = lookup(spec.tensormaps, kernel, idx)
        v = lookup(spec.args, kernel, idx)
        ty = p.type.name
        if p.array:
            if t is None:
                out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                        message=f"parameter {name} is .b8[{p.array}] (a by-value struct such as a "
                                                f"tensor map) but the launch gives {'a buffer' if b else 'no tensor map'}"))
            continue
        if b is not None:
            if p.type.bits != 64:
                out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                        message=f"buffer {name} is passed as a 64-bit pointer into .{ty} parameter "
                                                f"({p.type.bits}-bit)"))
            continue
        if t is not None:
            if p.type.bits != 64:
                out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                        message=f"tensor map {name} given for .{ty} parameter"))
            continue
        if v is None:
            out.append(AuditFinding(rule=R.ABI.id, loc=where, message=f"no value for parameter {name} (.{ty})"))
            continue
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, float) and not ty.startswith("f"):
            out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                    message=f"{name} = {v!r} is a float but the parameter is .{ty}"))
        elif isinstance(v, int) and ty.startswith("f"):
            if float(np.float32(v) if ty == "f32" else float(v)) != v:
                out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                        message=f"{name} = {v} is not exactly representable as .{ty}"))
        elif isinstance(v, int) and not _fits(v, ty):
            out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                    message=f"{name} = {v} does not fit the parameter's type .{ty}"))
        elif not isinstance(v, (int, float)):
            out.append(AuditFinding(rule=R.ABI.id, loc=where,
                                    message=f"{name} = {v!r}: only integers and floats can be passed"))
    return out


def param_blob(v, p) -> bytes:
    """The bytes of a scalar argument for PTX parameter ``p`` (size exactly ``p.size``)."""
    ty = p.type.name
    if ty == "f32":
        return np.float32(v).tobytes()
    if ty == "f64":
        return np.float64(v).tobytes()
    if ty == "f16":
        return np.float16(v).tobytes()
    n = p.size
    return (int(v) & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


#: Value semantics whose ``.ftz`` form only a fast-math build emits.
_FAST_OPS = {"add", "sub", "mul", "fma", "mad", "div", "sqrt", "rcp", "min", "max", "setp", "cvt", "abs", "neg"}


def fast_math(module, kernel) -> list:
    """Instructions that only a fast-math build emits (B10: compile-flag drift): f32
    ``div.approx``/``div.full``, ``sqrt.approx``, ``rcp.approx`` and arithmetic with
    ``.ftz``. ``ex2``/``lg2``/``sin``/``cos``/``tanh``/``rsqrt`` are always approximate
    (``expf`` itself uses ``ex2.approx.ftz``) and are not reported."""
    out = []
    for k in _functions(module, kernel):
        for i in instructions(k.body):
            mods = set(i.mods)
            sem = semantics_of(i)
            if sem in ("div", "sqrt", "rcp") and mods & {"approx", "full"}:
                why = "an approximate division/root (--use_fast_math, --prec-div=false or --prec-sqrt=false)"
            elif sem in _FAST_OPS and "ftz" in mods:
                why = "flushes subnormals (--use_fast_math or --ftz=true)"
            else:
                continue
            out.append(AuditFinding(rule=R.FAST_MATH.id, loc=_loc(i), message=f"{i.opcode}: {why}"))
    return out

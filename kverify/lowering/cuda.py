"""Structured core IR -> compilable CUDA C++.

``lower_module`` writes one translation unit: every ``.entry`` becomes an
``extern "C" __global__`` function with the kernel's own name, so nvcc gives its
parameters the same PTX names (``<kernel>_param_<i>``) and inline PTX can address them as
the original did; every ``.func`` becomes a ``static __device__ __noinline__`` function.
Inside a function:

* each register used is a C variable (``kverify.lowering.ctype.reg_ctype``), declared at the top
  and zero-initialized (PTX leaves registers undefined; nothing jumps over a declaration);
* ``.shared`` variables are ``__shared__`` arrays with their alignment, ``.extern
  .shared`` is ``extern __shared__``, ``.local`` is a local array, call-site ``.param``
  variables are local byte storage;
* ``If`` is ``if``; ``Loop`` is ``for (;;) { ...; break; }`` (falling off the body leaves
  the loop); ``Block`` is a brace block; ``Break``/``Continue`` of the innermost loop are
  ``break``/``continue``, any other is a ``goto`` to a label placed just after the target
  (break) or at the top of its body (continue);
* each instruction is one ``asm volatile`` (``kverify.lowering.asm``).

Directives: ``.maxntid``/``.reqntid`` (+ ``.minnctapersm``) become ``__launch_bounds__``,
``.reqnctapercluster`` becomes ``__cluster_dims__``, ``.maxnreg`` becomes ``__maxnreg__``.
"""
from __future__ import annotations

from kverify.semantics.ir.nodes import (Block, Break, Continue, GenericOf, If, Instr, Kernel, Loop, Module, Sym,
                                VarDecl, operand_regs)
from kverify.semantics.ir.optable import flow_of
from kverify.semantics.ir.types import Scalar, Vector
from kverify.semantics.ir.visit import instructions, walk

from .asm import Scope, SymInfo, lower_instr
from .ctype import (LoweringError, bytes_struct, bytes_struct_decl, c_ident, reg_ctype,
                    value_ctype)

IND = "  "

PRELUDE = """\
// Lowered by kverify from the core IR: one inline-PTX statement per instruction.
#include <cstring>
#pragma nv_diag_suppress 177  // declared but never referenced
#pragma nv_diag_suppress 550  // set but never used
#pragma nv_diag_suppress 128  // loop is not reachable
#pragma nv_diag_suppress 111  // statement is unreachable
template <typename T> static __device__ __forceinline__ T kv_ldp(const void* p) {
  T v; memcpy(&v, p, sizeof(T)); return v;
}
template <typename T> static __device__ __forceinline__ void kv_stp(void* p, T v) {
  memcpy(p, &v, sizeof(T));
}
"""


class _Names:
    """Unique C identifiers within one scope (a function, or the file)."""

    def __init__(self, taken=()):
        self.used = set(taken)

    def make(self, ptx_name: str) -> str:
        base = c_ident(ptx_name)
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name


def _var_ctype(v: VarDecl | object, structs: set) -> tuple[str, str]:
    """``(C element type, array suffix)`` of a variable or parameter declaration."""
    t = v.type
    if isinstance(t, Vector):
        raise LoweringError(f"vector-typed variable {v.name} cannot be lowered",
                            getattr(v, "loc", None) or _noloc())
    return value_ctype(t), ""


def _noloc():
    from kverify.semantics.ir.nodes import NOLOC

    return NOLOC


def _param_ctype(p, structs: set) -> str:
    """C type of a kernel/function parameter: a scalar, or a by-value byte struct for
    ``.b8 p[N]`` (a tensor map)."""
    if isinstance(p.type, Vector):
        raise LoweringError(f"vector-typed parameter {p.name} cannot be lowered")
    if p.array is not None:
        size = p.size
        align = p.align or max(p.type.bits // 8, 1)
        structs.add((size, align))
        return bytes_struct(size, align)
    return value_ctype(p.type)


def _reg_types(k: Kernel) -> dict:
    out = {}
    for d in k.regs:
        if d.count is None:
            out[d.name] = d.type
        else:
            for n in range(d.count):
                out[f"{d.name}{n}"] = d.type
    return out


def _used_regs(k: Kernel) -> list[str]:
    seen = {}
    for s, _ in walk(k.body):
        if isinstance(s, Instr):
            for op in s.operands:
                for r in operand_regs(op):
                    if not r.is_special:
                        seen.setdefault(r.name, None)
            if s.guard is not None:
                seen.setdefault(s.guard.reg.name, None)
        elif isinstance(s, If):
            seen.setdefault(s.cond.name, None)
    return list(seen)


def _entry_params_verbatim(k: Kernel) -> bool:
    return c_ident(k.name) == k.name and all(
        p.name == f"{k.name}_param_{i}" for i, p in enumerate(k.params))


def _directive_attrs(k: Kernel) -> list[str]:
    attrs = []
    bd = k.directive("reqntid") or k.directive("maxntid")
    if bd:
        n = 1
        for x in bd:
            n *= int(x)
        minb = k.directive("minnctapersm")
        attrs.append(f"__launch_bounds__({n}{', ' + str(minb[0]) if minb else ''})")
    cl = k.directive("reqnctapercluster")
    if cl:
        dims = list(cl) + [1] * (3 - len(cl))
        attrs.append(f"__cluster_dims__({', '.join(str(x) for x in dims)})")
    mr = k.directive("maxnreg")
    if mr:
        attrs.append(f"__maxnreg__({mr[0]})")
    return attrs


class _FunctionLowerer:
    def __init__(self, module: Module, k: Kernel, file_syms: dict, funcs: dict, structs: set,
                 file_names: _Names):
        self.m = module
        self.k = k
        self.structs = structs
        self.names = _Names(file_names.used)
        self.syms: dict = dict(file_syms)
        self.funcs = funcs
        self.goto_targets: set = set()
        self.decls: list[str] = []
        self.loops: list = []  # stack of enclosing Loop/Block labels -> kind
        self.labels: dict = {}  # IR label -> (kind, C break label, C continue label)

    # ---- declarations -----------------------------------------------------------------
    def params(self) -> list[str]:
        k = self.k
        out = []
        if k.is_entry:
            verbatim = _entry_params_verbatim(k)
            for p in k.params:
                ct = _param_ctype(p, self.structs)
                cname = self.names.make(p.name)
                if p.array is not None:
                    out.append(f"const __grid_constant__ {ct} {cname}")
                else:
                    out.append(f"{ct} {cname}")
                self.syms[p.name] = SymInfo("kparam" if verbatim else "kparam_c", cname, p)
        else:
            for p in k.rets:
                ct = _param_ctype(p, self.structs)
                cname = self.names.make(p.name)
                out.append(f"{ct} &{cname}")
                self.syms[p.name] = SymInfo("cparam", cname, p)
            for p in k.params:
                ct = _param_ctype(p, self.structs)
                cname = self.names.make(p.name)
                out.append(f"{ct} {cname}")
                self.syms[p.name] = SymInfo("cparam", cname, p)
        return out

    def variables(self):
        for v in self.k.vars:
            self.decls.append(self.var_decl(v, local=True))

    def var_decl(self, v: VarDecl, local: bool) -> str:
        elem, _ = _var_ctype(v, self.structs)
        cname = self.names.make(v.name)
        align = f"__align__({v.align}) " if v.align else ""
        dims = "".join(f"[{d}]" if d is not None else "[]" for d in v.dims)
        sp = v.space
        if sp.startswith("shared"):
            kind = "shared"
            q = ("extern __shared__ " if v.extern else "__shared__ ")
            self.syms[v.name] = SymInfo(kind, cname, v)
            return f"{q}{align}{elem} {cname}{dims};"
        if sp == "local":
            self.syms[v.name] = SymInfo("local", cname, v)
            return f"{align}{elem} {cname}{dims};"
        if sp == "param":
            self.syms[v.name] = SymInfo("cparam", cname, v)
            if v.dims:
                n = 1
                for d in v.dims:
                    n *= d or 0
                size = n * max(v.type.bits // 8, 1)
                al = v.align or max(v.type.bits // 8, 1)
                self.structs.add((size, al))
                return f"{bytes_struct(size, al)} {cname};"
            return f"{elem} {cname} = 0;"
        if sp in ("global", "const"):
            raise LoweringError(f"function-scope .{sp} variable {v.name} cannot be lowered",
                                v.loc)
        raise LoweringError(f".{sp} variable {v.name} cannot be lowered", v.loc)

    def registers(self) -> dict:
        types = _reg_types(self.k)
        regs = {}
        groups: dict = {}
        for name in _used_regs(self.k):
            t = types.get(name)
            if t is None:
                continue  # reported when the instruction using it is lowered
            if isinstance(t, Vector):
                raise LoweringError(f"vector register {name} ({t}) cannot be lowered", self.k.loc)
            cname = self.names.make(name)
            regs[name] = (cname, t)
            ct, _ = reg_ctype(t)
            groups.setdefault(ct, []).append(cname)
        for ct, names in groups.items():
            for i in range(0, len(names), 8):
                chunk = names[i:i + 8]
                self.decls.append(f"{ct} " + ", ".join(f"{n} = 0" for n in chunk) + ";")
        return regs

    # ---- statements -------------------------------------------------------------------
    def label(self, ir_label: str, kind: str) -> tuple:
        if ir_label not in self.labels:
            base = c_ident(ir_label)
            self.labels[ir_label] = (kind, self.names.make(f"{base}_break"),
                                     self.names.make(f"{base}_continue"))
        return self.labels[ir_label]

    def stmts(self, body, depth: int) -> list[str]:
        out = []
        p = IND * depth
        for s in body:
            if isinstance(s, Instr):
                out += [p + line for line in lower_instr(self.scope, s)]
            elif isinstance(s, If):
                c, _ = self.scope.reg(s.cond, _AsInstr(s))
                out.append(f"{p}if ({'!' if s.negated else ''}{c}) {{")
                out += self.stmts(s.then, depth + 1)
                if s.orelse:
                    out.append(p + "} else {")
                    out += self.stmts(s.orelse, depth + 1)
                out.append(p + "}")
            elif isinstance(s, Loop):
                _, brk, cont = self.label(s.label, "loop")
                self.loops.append(s.label)
                inner = self.stmts(s.body, depth + 1)
                self.loops.pop()
                out.append(p + "for (;;) {")
                if cont in self.goto_targets:
                    out.append(f"{p}{IND}{cont}: ;")
                out += inner
                out.append(f"{p}{IND}break;")
                out.append(p + "}")
                if brk in self.goto_targets:
                    out.append(f"{p}{brk}: ;")
            elif isinstance(s, Block):
                _, brk, _ = self.label(s.label, "block")
                inner = self.stmts(s.body, depth + 1)
                out.append(p + "{")
                out += inner
                out.append(p + "}")
                if brk in self.goto_targets:
                    out.append(f"{p}{brk}: ;")
            elif isinstance(s, (Break, Continue)):
                if s.label not in self.labels:
                    raise LoweringError(f"{type(s).__name__.lower()} to unknown label {s.label}",
                                        s.loc)
                kind, brk, cont = self.labels[s.label]
                innermost = bool(self.loops) and self.loops[-1] == s.label
                if isinstance(s, Break):
                    if kind == "loop" and innermost:
                        out.append(p + "break;")
                    else:
                        self.goto_targets.add(brk)
                        out.append(f"{p}goto {brk};")
                else:
                    if kind != "loop":
                        raise LoweringError(f"continue to block label {s.label}", s.loc)
                    if innermost:
                        out.append(p + "continue;")
                    else:
                        self.goto_targets.add(cont)
                        out.append(f"{p}goto {cont};")
            else:
                raise LoweringError(f"cannot lower statement {s!r}")
        return out

    def lower(self) -> str:
        k = self.k
        params = self.params()
        self.variables()
        regs = self.registers()
        self.scope = Scope(regs, self.syms, k.is_entry, self.funcs)
        body = self.stmts(k.body, 1)
        if k.is_entry:
            attrs = " ".join(_directive_attrs(k))
            head = f'extern "C" __global__ void {attrs + " " if attrs else ""}{c_ident(k.name)}('
        else:
            head = f"static __device__ __noinline__ void {self.funcs[k.name].cname}("
        sig = head + ", ".join(params) + ") {"
        return "\n".join([sig] + [IND + d for d in self.decls] + body + ["}"]) + "\n"


class _AsInstr:
    """Error-reporting shim: lets ``Scope.reg`` report an ``If`` condition's position."""

    def __init__(self, s):
        self.loc = s.loc
        self.opcode = "if"


def _module_vars(m: Module, names: _Names, structs: set) -> tuple[dict, list[str], dict]:
    """File-scope declarations of module variables; extern shared ones are re-declared in
    each function (``extern __shared__`` at function scope)."""
    syms, decls, extern_shared = {}, [], {}
    functions = {f.name for f in m.kernels}
    for v in m.vars:
        elem, _ = _var_ctype(v, structs)
        dims = "".join(f"[{d}]" if d is not None else "[]" for d in v.dims)
        align = f"__align__({v.align}) " if v.align else ""
        cname = names.make(v.name)
        init = ""
        if v.init is not None:
            named = [x.name for x in v.init if isinstance(x, Sym) and (isinstance(x, GenericOf) or
                                                                       x.name not in functions)]
            if named:
                raise LoweringError(f"the initializer of {v.name} names variable {named[0]}: an address "
                                    "in a static initializer cannot be lowered", v.loc)
            if isinstance(v.type, Scalar) and v.type.is_float:  # the initializer holds the bits
                elem = value_ctype(Scalar(f"b{v.type.bits}"))
            init = " = {" + ", ".join(str(x) for x in v.init) + "}" if v.dims else f" = {v.init[0]}"
        if v.space.startswith("shared"):
            if v.extern:
                extern_shared[v.name] = f"extern __shared__ {align}{elem} {cname}{dims};"
            else:
                decls.append(f"static __shared__ {align}{elem} {cname}{dims};")
            syms[v.name] = SymInfo("shared", cname, v)
        elif v.space == "global":
            ext = "extern " if v.extern else "static "
            decls.append(f"{ext}__device__ {align}{elem} {cname}{dims}{init};")
            syms[v.name] = SymInfo("global", cname, v)
        elif v.space == "const":
            ext = "extern " if v.extern else "static "
            decls.append(f"{ext}__constant__ {align}{elem} {cname}{dims}{init};")
            syms[v.name] = SymInfo("const", cname, v)
        else:
            raise LoweringError(f"module-scope .{v.space} variable {v.name} cannot be lowered",
                                v.loc)
    return syms, decls, extern_shared


def called_functions(m: Module, k: Kernel) -> list[Kernel]:
    """Device functions reachable from ``k`` through direct calls, callees first."""
    by_name = {f.name: f for f in m.kernels if not f.is_entry}
    order, seen = [], set()

    def visit(fn: Kernel):
        for i in instructions(fn.body):
            if flow_of(i) == "call":
                for op in i.operands:
                    name = getattr(op, "name", None)
                    if name in by_name and name not in seen:
                        seen.add(name)
                        visit(by_name[name])
                        order.append(by_name[name])

    visit(k)
    return order


def _lower(module: Module, kernels: list[Kernel]) -> str:
    structs: set = set()
    file_names = _Names()
    for k in module.kernels:
        if k.is_entry:
            file_names.used.add(c_ident(k.name))
    file_syms, file_decls, extern_shared = _module_vars(module, file_names, structs)
    funcs_needed: list[Kernel] = []
    for k in kernels:
        for f in called_functions(module, k):
            if f not in funcs_needed:
                funcs_needed.append(f)
    funcs = {}
    for f in module.kernels:
        if not f.is_entry:
            funcs[f.name] = SymInfo("func", file_names.make(f.name), f)
    file_syms.update(funcs)
    bodies = []
    for fn in funcs_needed + list(kernels):
        fl = _FunctionLowerer(module, fn, file_syms, funcs, structs, file_names)
        fl.decls.extend(extern_shared.values())
        bodies.append(fl.lower())
    out = [PRELUDE]
    out += [bytes_struct_decl(size, align) for size, align in sorted(structs)]
    out += file_decls
    if out[-1] != PRELUDE:
        out.append("")
    out += bodies
    return "\n".join(out)


def lower_kernel(module: Module, kernel: Kernel | str) -> str:
    """CUDA C++ source of one kernel of ``module`` (and the device functions it calls)."""
    if isinstance(kernel, str):
        kernel = module.kernel(kernel)
    if not kernel.is_entry:
        raise LoweringError(f"{kernel.name} is a device function, not a kernel", kernel.loc)
    try:
        return _lower(module, [kernel])
    except LoweringError as e:
        if e.file == "<input>" and module.path:
            e.file = module.path
        raise


def lower_module(module: Module) -> str:
    """CUDA C++ source of every kernel of ``module`` in one translation unit."""
    try:
        return _lower(module, [k for k in module.kernels if k.is_entry])
    except LoweringError as e:
        if e.file == "<input>" and module.path:
            e.file = module.path
        raise

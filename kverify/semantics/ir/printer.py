"""The IR text format: PTX statement syntax plus structured control flow.

``print_module`` writes it and ``kverify.semantics.ir.text.parse_ir`` reads it back; print ->
parse -> print is a fixed point. Instructions keep their PTX spelling and end with
``!loc FILE LINE COL PTXLINE`` (file index from the ``.file`` table, 0 when unknown).
"""
from __future__ import annotations

from .types import Vector

# The printer reads nodes by their statement kind and does not import ``nodes``: ``str()`` of a
# node is this printer (``nodes`` imports it), and the import runs one way.

IND = "  "


def _type(t) -> str:
    return f".v{t.count} .{t.elem.name}" if isinstance(t, Vector) else f".{t.name}"


class Printer:
    def __init__(self, files: tuple = (), with_locs: bool = True, source_lines: dict | None = None):
        self.file_index = {path: i for i, path in files}
        self.with_locs = with_locs
        self.source_lines = source_lines  # {path: [lines]}: append the source text as a comment

    def loc(self, loc) -> str:
        if not self.with_locs:
            return ""
        f = self.file_index.get(loc.file, 0) if loc.file else 0
        return f" !loc {f} {loc.line} {loc.col} {loc.ptx_line}"

    def comment(self, loc) -> str:
        """The kernel source line as a trailing comment, when the source is at hand."""
        if self.source_lines and loc.file in self.source_lines and loc.line:
            lines = self.source_lines[loc.file]
            if 0 < loc.line <= len(lines):
                return f"  // {loc.file.rsplit('/', 1)[-1]}:{loc.line}: {lines[loc.line - 1].strip()}"
        return ""

    def instr(self, i) -> str:
        g = f"{i.guard} " if i.guard else ""
        ops = ", ".join(str(o) for o in i.operands)
        b = "blocking " if i.blocking else ""
        return f"{b}{g}{i.opcode}{' ' + ops if ops else ''};{self.loc(i.loc)}{self.comment(i.loc)}"

    def stmts(self, stmts, depth: int) -> list[str]:
        out = []
        p = IND * depth
        for s in stmts:
            kind = type(s).__name__
            if kind == "Instr":
                out.append(p + self.instr(s))
            elif kind == "If":
                out.append(f"{p}if {'!' if s.negated else ''}{s.cond}{self.loc(s.loc)} {{{self.comment(s.loc)}")
                out += self.stmts(s.then, depth + 1)
                if s.orelse:
                    out.append(p + "} else {")
                    out += self.stmts(s.orelse, depth + 1)
                out.append(p + "}")
            elif kind == "Loop":
                ivs = "".join(f" iv({iv.reg}, {iv.init}, {iv.step})" for iv in s.ivs)
                trip = f" trip({s.trip_count})" if s.trip_count is not None else ""
                out.append(f"{p}loop {s.label}{ivs}{trip}{self.loc(s.loc)} {{{self.comment(s.loc)}")
                out += self.stmts(s.body, depth + 1)
                out.append(p + "}")
            elif kind == "Block":
                out.append(f"{p}block {s.label}{self.loc(s.loc)} {{{self.comment(s.loc)}")
                out += self.stmts(s.body, depth + 1)
                out.append(p + "}")
            elif kind == "Break":
                out.append(f"{p}break {s.label};{self.loc(s.loc)}{self.comment(s.loc)}")
            elif kind == "Continue":
                out.append(f"{p}continue {s.label};{self.loc(s.loc)}{self.comment(s.loc)}")
            else:  # pragma: no cover - every Stmt kind is handled above
                raise TypeError(f"not a statement: {s!r}")
        return out

    @staticmethod
    def param(p) -> str:
        parts = [".param"]
        if p.ptr:
            parts.append(".ptr")
            if p.ptr.space != "generic":
                parts.append("." + p.ptr.space)
        if p.align:
            parts.append(f".align {p.align}")
        parts.append(_type(p.type))
        parts.append(p.name + (f"[{p.array}]" if p.array is not None else ""))
        return " ".join(parts)

    @staticmethod
    def var(v) -> str:
        parts = []
        if v.linkage:
            parts.append("." + v.linkage)
        parts.append("." + v.space)
        if v.align:
            parts.append(f".align {v.align}")
        parts.append(_type(v.type))
        dims = "".join(f"[{d if d is not None else ''}]" for d in v.dims)
        s = " ".join(parts) + f" {v.name}{dims}"
        if v.init is not None:
            t = v.type.elem if isinstance(v.type, Vector) else v.type
            hexf = {"f32": "0f{:08X}", "f64": "0d{:016X}"}.get(t.name)  # a float's bits as PTX writes them
            s += " = {" + ", ".join(hexf.format(x) if hexf and isinstance(x, int) else str(x) for x in v.init) + "}"
        return s + ";"

    @staticmethod
    def reg(r) -> str:
        rng = f"<{r.count}>" if r.count is not None else ""
        return f".reg {_type(r.type)} {r.name}{rng};"

    def kernel(self, k) -> list[str]:
        head = []
        if k.linkage:
            head.append("." + k.linkage)
        head.append(".entry" if k.is_entry else ".func")
        if k.rets:
            head.append("(" + ", ".join(self.param(p) for p in k.rets) + ")")
        out = [" ".join(head) + f" {k.name}("]
        out += [f"{IND}{self.param(p)}{',' if i < len(k.params) - 1 else ''}"
                for i, p in enumerate(k.params)]
        out.append(")")
        for name, vals in k.directives:
            if name == "pragma":
                out.append(".pragma " + ", ".join(f'"{v}"' for v in vals) + ";")
            else:
                out.append(f".{name}" + (" " + ", ".join(str(v) for v in vals) if vals else ""))
        out.append("{")
        out += [IND + self.reg(r) for r in k.regs]
        out += [IND + self.var(v) for v in k.vars]
        for pr in k.protos:
            rets = "(" + ", ".join(self.param(x) for x in pr.rets) + ") " if pr.rets else ""
            out.append(f"{IND}{pr.name}: .callprototype {rets}_ ("
                       + ", ".join(self.param(x) for x in pr.params) + ");")
        out += self.stmts(k.body, 1)
        out.append("}")
        return out

    def module(self, m) -> str:
        out = [f".version {m.version}" if m.version else None,
               ".target " + ", ".join(m.target) if m.target else None,
               f".address_size {m.address_size}"]
        out = [x for x in out if x]
        out += [f'.file {i} "{p}"' for i, p in m.files]
        out += [self.var(v) for v in m.vars]
        for k in m.kernels:
            out.append("")
            out += self.kernel(k)
        return "\n".join(out) + "\n"


def print_module(m, with_locs: bool = True, source_lines: dict | None = None) -> str:
    return Printer(m.files, with_locs, source_lines).module(m)


def print_kernel(m, k, with_locs: bool = True, source_lines: dict | None = None) -> str:
    return "\n".join(Printer(m.files, with_locs, source_lines).kernel(k)) + "\n"

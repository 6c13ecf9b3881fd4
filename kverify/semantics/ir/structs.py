"""Field names of by-value struct kernel parameters, from the CUDA source: the byte layout of
the parameter's struct type (C rules: each member at its alignment, the struct's size a
multiple of its largest alignment), so that a pointer kverify finds at byte 8 of parameter
``A`` can be called ``A.q`` (``kverify.launch.params.with_struct_pointers``).

Only plain data structs are laid out: members of builtin scalar types, CUDA vector types,
pointers, arrays of constant length, and structs defined in the same file (named, or anonymous
and nested). Anything else -- templates, unions, bit-fields, virtual functions, alignment
attributes, macros as lengths -- leaves the layout unknown, and so does a layout whose size is
not the parameter's size in the PTX: the fields are then named by their offsets. Names are
presentation only: no verdict depends on them.
"""
from __future__ import annotations

import re

from .nodes import Module

#: builtin types: size, alignment (x86-64 / CUDA device ABI)
SCALARS = {
    "bool": (1, 1), "char": (1, 1), "signed char": (1, 1), "unsigned char": (1, 1),
    "short": (2, 2), "short int": (2, 2), "unsigned short": (2, 2), "unsigned short int": (2, 2),
    "int": (4, 4), "signed": (4, 4), "unsigned": (4, 4), "unsigned int": (4, 4),
    "long": (8, 8), "long int": (8, 8), "unsigned long": (8, 8), "unsigned long int": (8, 8),
    "long long": (8, 8), "long long int": (8, 8), "unsigned long long": (8, 8), "unsigned long long int": (8, 8),
    "float": (4, 4), "double": (8, 8), "size_t": (8, 8), "ptrdiff_t": (8, 8), "intptr_t": (8, 8),
    "uintptr_t": (8, 8), "int8_t": (1, 1), "uint8_t": (1, 1), "int16_t": (2, 2), "uint16_t": (2, 2),
    "int32_t": (4, 4), "uint32_t": (4, 4), "int64_t": (8, 8), "uint64_t": (8, 8),
    "half": (2, 2), "__half": (2, 2), "__nv_bfloat16": (2, 2), "half2": (4, 4), "__half2": (4, 4),
    "char2": (2, 2), "uchar2": (2, 2), "char4": (4, 4), "uchar4": (4, 4), "short2": (4, 4), "ushort2": (4, 4),
    "short4": (8, 8), "ushort4": (8, 8), "int2": (8, 8), "uint2": (8, 8), "float2": (8, 8),
    "int3": (12, 4), "uint3": (12, 4), "float3": (12, 4), "dim3": (12, 4),
    "int4": (16, 16), "uint4": (16, 16), "float4": (16, 16), "double2": (16, 16), "long2": (16, 16),
    "longlong2": (16, 16), "ulonglong2": (16, 16),
}
QUALIFIERS = {"const", "volatile", "struct", "class", "__grid_constant__", "__restrict__", "__restrict", "restrict",
              "typename"}


class Unknown(Exception):
    """The layout is not known (the module docstring says when)."""


def struct_pointer_fields(module: Module, kernel, found: dict) -> dict:
    """``{parameter index: {byte offset: field path}}`` for the parameters of ``found``
    (``{index: {"pointers": [offsets]}}``) whose struct type the CUDA source named by the
    module's ``.file`` table defines, for the offsets that are pointer members."""
    from .cuda import _match, _ptx_name_matches, _split_params, _strip_comments
    from .load import source_lines

    out: dict = {}
    for path, lines in source_lines(module).items():
        if not path.endswith((".cu", ".cuh")):
            continue
        text = _strip_comments("\n".join(lines))
        decls = None
        for m in re.finditer(r"__global__", text):
            paren = text.find("(", m.end())
            if paren < 0:
                continue
            names = re.findall(r"[A-Za-z_]\w*", text[m.end():paren])
            if names and _ptx_name_matches(kernel.name, names[-1]):
                got = _split_params(text[paren + 1:_match(text, paren)])
                if len(got) == len(kernel.params):
                    decls = got
                    break
        if decls is None:
            continue
        types = _Types(text)
        for i, f in found.items():
            tname = _by_value_type(decls[i])
            if tname is None:
                continue
            try:
                size, _, leaves = types.layout(tname)
            except Unknown:
                continue
            if size != kernel.params[i].size:
                continue
            ptrs = {off: p for off, p, is_ptr in leaves if is_ptr}
            names = {off: ptrs[off] for off in f["pointers"] if off in ptrs}
            if names:
                out[i] = names
        if out:
            break
    return out


def _by_value_type(decl: str) -> str | None:
    """The struct type name of a by-value parameter declaration (``struct S A``, ``const Args
    a``), or None (a pointer, a reference, a template)."""
    decl = re.sub(r"=.*$", "", decl.strip())
    if any(c in decl for c in "*&<[("):
        return None
    ids = [t for t in re.findall(r"[A-Za-z_][\w:]*", decl) if t not in QUALIFIERS]
    return ids[0] if len(ids) == 2 else None


class _Types:
    """The struct definitions of one source text, laid out on demand."""

    def __init__(self, text: str):
        self.text = text
        self.done: dict = {}

    def body_of(self, name: str) -> str:
        short = name.split("::")[-1]
        m = re.search(rf"\b(?:struct|class)\s+{re.escape(short)}\s*(?::[^{{;]*)?\{{", self.text)
        if m is not None:
            if ":" in self.text[m.start():m.end()].split(short, 1)[1]:
                raise Unknown(f"{name} has a base class")
            return self._braced(m.end() - 1)
        m = re.search(rf"\btypedef\s+struct\s*\w*\s*\{{", self.text)
        while m is not None:
            end = self._close(m.end() - 1)
            tail = re.match(r"\s*([A-Za-z_]\w*)\s*;", self.text[end + 1:])
            if tail and tail.group(1) == short:
                return self.text[m.end():end]
            m = re.compile(r"\btypedef\s+struct\s*\w*\s*\{").search(self.text, end)
        raise Unknown(f"no definition of {name}")

    def _close(self, open_i: int) -> int:
        depth = 0
        for j in range(open_i, len(self.text)):
            if self.text[j] == "{":
                depth += 1
            elif self.text[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        raise Unknown("unbalanced braces")

    def _braced(self, open_i: int) -> str:
        return self.text[open_i + 1:self._close(open_i)]

    def layout(self, name: str) -> tuple:
        """``(size, alignment, [(offset, path, is_pointer)])`` of struct ``name``."""
        if name in self.done:
            got = self.done[name]
            if got is None:
                raise Unknown(f"{name} contains itself")
            return got
        self.done[name] = None
        got = self.layout_body(self.body_of(name))
        self.done[name] = got
        return got

    def layout_body(self, body: str) -> tuple:
        if re.search(r"\b(union|virtual|template|alignas|__align__|operator)\b", body) or "(" in body:
            raise Unknown("not a plain struct")  # (also: methods, constructors, function pointers)
        off, align, leaves = 0, 1, []
        for member in _members(body):
            member = re.sub(r"^\s*(public|private|protected)\s*:", "", member).strip()
            if not member:
                continue
            if re.match(r"(static|typedef|using|friend)\b", member):
                continue  # no storage in an object
            if "{" in member:  # a nested struct, defined in place: struct [TAG] { ... } decls
                m = re.match(r"(?:struct|class)\s*([A-Za-z_]\w*)?\s*\{", member)
                if m is None:
                    raise Unknown("a member not understood")
                depth, j = 0, m.end() - 1
                for j in range(m.end() - 1, len(member)):
                    if member[j] == "{":
                        depth += 1
                    elif member[j] == "}":
                        depth -= 1
                        if depth == 0:
                            break
                inner = self.layout_body(member[m.end():j])
                if m.group(1):
                    self.done[m.group(1)] = inner
                declarators = [d for d in _split_commas(member[j + 1:]) if d.strip()]
                ty = inner
            else:
                parts = _split_commas(member)
                tm = re.match(r"^(.*?)([\s*&]*\b[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*)$", parts[0].strip())
                if tm is None:
                    raise Unknown("a member not understood")
                ty = self.type_of(tm.group(1))
                declarators = [tm.group(2)] + parts[1:]
            for d in declarators:
                dm = re.match(r"^\s*([\s*&]*)\s*(?:__restrict__\s*)?([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", d)
                if dm is None or ":" in d or "&" in dm.group(1):
                    raise Unknown("a declarator not understood")
                name, dims = dm.group(2), re.findall(r"\[([^\]]*)\]", dm.group(3))
                esize, ealign, eleaves = (8, 8, [(0, "", True)]) if "*" in dm.group(1) else ty
                count = 1
                for x in dims:
                    if not x.strip().isdigit():
                        raise Unknown("an array length that is not a number")
                    count *= int(x)
                off = -(-off // ealign) * ealign
                for n in range(count):
                    sub = f"{name}[{n}]" if dims else name
                    for o, p, is_ptr in eleaves:
                        leaves.append((off + n * esize + o, f"{sub}.{p}" if p else sub, is_ptr))
                off += esize * count
                align = max(align, ealign)
        size = -(-off // align) * align
        return size, align, leaves

    def type_of(self, spelled: str) -> tuple:
        words = [w for w in re.findall(r"[A-Za-z_][\w:]*", spelled) if w not in QUALIFIERS and w != "signed"]
        if "<" in spelled or not words:
            raise Unknown("a member type not understood")
        if "*" in spelled:  # int *__restrict__ p: the declarator's stars read with the type
            return 8, 8, [(0, "", True)]
        key = " ".join(words)
        if key in SCALARS or (key.startswith("std::") and key[5:] in SCALARS):
            size, align = SCALARS.get(key) or SCALARS[key[5:]]
            return size, align, [(0, "", False)]
        if len(words) == 1:
            return self.layout(words[0])
        raise Unknown(f"type {spelled.strip()} not known")


def _members(body: str) -> list:
    """The member declarations of a struct body (split at ``;`` outside braces)."""
    out, depth, cur = [], 0, []
    for c in body:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == ";" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def _split_commas(s: str) -> list:
    out, depth, cur = [], 0, []
    for c in s:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    out.append("".join(cur))
    return out

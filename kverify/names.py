"""Names as the programmer wrote them: the one place that demangles.

PTX carries C++ names Itanium-mangled: a kernel ``_Z8stencil3PKfPfi`` is
``stencil3(const float*, float*, int)``, and a ``__shared__`` array declared inside it is
``_ZZ8stencil3PKfPfiE1s``, which a user knows as ``s``. Demangling is libstdc++'s
``abi::__cxa_demangle`` through the ``cxxfilt`` package (the same code as ``c++filt``); where
that is not available or a name does not demangle, the name is shown as it is in the PTX.

Objects in messages are written ``var+OFFSET`` (a byte offset) by the analyses. For a user
they are shown as ``s[33]`` when the element size is known (the variable's own PTX type, or
the width of the access that touched it, since nvcc declares every array ``.b8``) and the
offset falls on an element, else as ``s+132`` (bytes). ``rewrite`` turns a message into that
form and lists what it renamed (symbol, byte offset, element size) for the JSON report.

This module imports nothing of kverify: every layer may use it.
"""
from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1)
def _demangler():
    """libstdc++'s demangler through ctypes, loaded at the first mangled name (loading it looks
    the libraries up, which a kernel without C++ names need not pay for); None where it is not
    installed or there is no libstdc++ to load: names stay mangled."""
    try:
        import cxxfilt
    except Exception:  # noqa: BLE001
        return None
    return cxxfilt

_BUILTIN = r"(?:unsigned |signed )?(?:long long|long|short|char|int)|[A-Za-z_][\w:]*(?:<[^<>]*>)?"
#: ``float const*`` (c++filt's spelling) -> ``const float*`` (the spelling in CUDA sources)
_EAST_CONST = re.compile(rf"(?<![\w:>])({_BUILTIN}) const(?=[*&])")


@lru_cache(maxsize=4096)
def demangle(symbol: str) -> str:
    """The C++ name of an Itanium-mangled ``symbol`` (``_Z8stencil3PKfPfi`` ->
    ``stencil3(const float*, float*, int)``); any other name, or one that does not demangle,
    unchanged."""
    if not symbol.startswith("_Z") or _demangler() is None:
        return symbol
    try:
        out = _demangler().demangle(symbol)
    except Exception:  # noqa: BLE001 - InvalidName, or the library failing: keep the PTX name
        return symbol
    return _EAST_CONST.sub(r"const \1", out) if out else symbol


def short_name(symbol: str) -> str:
    """A variable's name as declared: ``_ZZ8stencil3PKfPfiE1s`` (a static local of
    ``stencil3``) -> ``s``; ``_ZN2ns4smemE`` -> ``ns::smem``; anything else unchanged."""
    full = demangle(symbol)
    if symbol.startswith("_ZZ") and full != symbol:
        return _last_component(full)
    return full


def _last_component(name: str) -> str:
    """``f(int)::s`` -> ``s``: the part after the last ``::`` outside brackets."""
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == ":" and depth == 0 and name[i + 1:i + 2] == ":":
            cut = i + 2
    return name[cut:] or name


def object_name(symbol: str, offset: int = 0, element_bytes: int | None = None, array: bool = True) -> str:
    """How an object ``symbol+offset`` is shown: ``s[33]`` for offset 132 with 4-byte elements,
    ``s`` for a scalar variable (``array`` false) at offset 0, ``s+132`` (bytes) when the
    element size is unknown or the offset falls inside an element."""
    base = short_name(symbol)
    if element_bytes and offset % element_bytes == 0 and (array or offset):
        return f"{base}[{offset // element_bytes}]"
    return f"{base}+{offset}" if offset else base


def brief(name: str, limit: int = 120) -> str:
    """``name`` as a message shows it: a C++ name longer than ``limit`` characters with its template
    arguments and parameter list elided (``cutlass::device_kernel<…>(…)``; CUTLASS kernel names run
    to kilobytes, and the report's header gives the whole name)."""
    if len(name) <= limit or "operator" in name:  # operator<, operator() are not brackets
        return name
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            if depth == 0:
                out.append(ch + "…")
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


_MANGLED = r"_Z[\w$]+"
#: a kernel parameter as nvcc names it, ``<mangled kernel>_param_<i>``: shown as ``param_<i>``
#: (the message names the kernel; CUTLASS kernel names run to kilobytes)
_PARAM = re.compile(r"_Z[\w$]+?_param_(\d+)")


def rewrite(text: str, variables=None, access_bytes=None) -> tuple[str, list]:
    """``text`` with every object ``var`` / ``var+OFFSET`` of ``variables`` (name ->
    ``(element_bytes or None, is_array)``) and every mangled name shown as a user wrote it,
    and the list of objects renamed: ``{"name", "symbol", "offset", "element_bytes"}``.
    ``access_bytes`` (symbol -> bytes) gives an element size for variables whose own type
    does not (``.b8`` arrays): the width of the access the message is about."""
    variables = variables or {}
    access_bytes = access_bytes or {}
    names = sorted((re.escape(v) for v in variables if not v.startswith("_Z")), key=len, reverse=True)
    pattern = re.compile(rf"(?<![\w$.%'’])({'|'.join(names + [_MANGLED])})(?:\+(\d+))?(?![\w$'’])")
    objects: list = []
    seen = set()

    def sub(m):
        sym, off = m.group(1), m.group(2)
        if sym in variables and off is None and not sym.startswith("_Z"):
            return sym  # a bare user-named object (also an English word: "a", "s", "in") stays as written
        if sym in variables:
            elem, array = variables[sym]
            elem = elem or access_bytes.get(sym)
            name = object_name(sym, int(off or 0), elem, array)
            key = (sym, int(off or 0))
            if key not in seen:
                seen.add(key)
                objects.append({"name": name, "symbol": sym, "offset": int(off or 0), "element_bytes": elem})
            return name
        param = _PARAM.fullmatch(sym)
        name = f"param_{param.group(1)}" if param else brief(demangle(sym))
        return name + (f"+{off}" if off else "")

    if not text:
        return text, objects
    return pattern.sub(sub, text), objects

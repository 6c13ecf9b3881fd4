"""C types of PTX registers, parameters and variables in lowered CUDA, the inline-asm
constraint letter each register class binds through, and C identifiers for PTX names."""
from __future__ import annotations

import re

from kverify.semantics.ir.errors import KernelError
from kverify.semantics.ir.nodes import Loc, NOLOC
from kverify.semantics.ir.types import Scalar, Vector


class LoweringError(KernelError):
    """A construct the CUDA lowering cannot express; reported at the IR node's position."""

    def __init__(self, message: str, loc: Loc = NOLOC, file: str | None = None):
        super().__init__(message, loc.file or file, loc.line or loc.ptx_line, loc.col)


#: ``(C type, asm constraint)`` of a register by PTX type. Predicates are carried as an
#: ``unsigned`` 0/1 and turned into a ``.reg .pred`` inside each asm statement (inline asm
#: has no predicate constraint). 8-bit registers live in 16-bit ``h`` registers, as nvcc
#: does. ``q`` (128-bit) needs CUDA 12.4 or later.
def reg_ctype(t) -> tuple[str, str]:
    if isinstance(t, Vector):
        raise ValueError(f"vector register type {t}")
    name = t.name
    if name == "pred":
        return "unsigned", "r"
    if name == "f32":
        return "float", "f"
    if name == "f64":
        return "double", "d"
    bits = t.bits
    if bits <= 16:
        return "unsigned short", "h"
    if bits == 32:
        return "unsigned", "r"
    if bits == 64:
        return "unsigned long long", "l"
    if bits == 128:
        return "unsigned __int128", "q"
    raise ValueError(f"no C type for register type {t}")


#: C value types of PTX scalar types, used for parameters, variables and by-value
#: ``ld.param``/``st.param`` moves (signed types keep their sign so narrow loads extend).
_VALUE_CTYPE = {
    "b8": "unsigned char", "u8": "unsigned char", "s8": "signed char",
    "b16": "unsigned short", "u16": "unsigned short", "s16": "short",
    "f16": "unsigned short", "bf16": "unsigned short",
    "b32": "unsigned", "u32": "unsigned", "s32": "int",
    "f16x2": "unsigned", "bf16x2": "unsigned", "tf32": "unsigned",
    "b64": "unsigned long long", "u64": "unsigned long long", "s64": "long long",
    "f32": "float", "f64": "double",
    "e4m3": "unsigned char", "e5m2": "unsigned char",
    "e4m3x2": "unsigned short", "e5m2x2": "unsigned short",
    "b128": "unsigned __int128", "pred": "unsigned",
}


def value_ctype(t: Scalar) -> str:
    return _VALUE_CTYPE[t.name]


def bytes_struct(size: int, align: int) -> str:
    """Name of the by-value byte-array struct of ``size`` bytes and ``align``ment (a
    ``.param .align 64 .b8 p[128]`` tensor map is ``kv_bytes128_a64``)."""
    return f"kv_bytes{size}_a{align}"


def bytes_struct_decl(size: int, align: int) -> str:
    return f"struct __align__({align}) {bytes_struct(size, align)} {{ unsigned char bytes[{size}]; }};"


_C_KEYWORDS = frozenset("""
alignas alignof asm auto bool break case catch char char16_t char32_t char8_t class const
consteval constexpr constinit const_cast continue decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept nullptr operator private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while memcpy dim3 min max abs
""".split())


def c_ident(name: str) -> str:
    """A C identifier for a PTX name: ``%r12`` -> ``r12``, ``p$3`` -> ``p_S3``,
    ``__local_depot0`` stays. Names that would be C keywords get a ``kv_`` prefix."""
    s = name.lstrip("%")
    s = s.replace("$", "_S")
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    if not s or s[0].isdigit():
        s = "kv_" + s
    if s in _C_KEYWORDS or s.startswith("kv_") and name.lstrip("%") == s:
        s = "kv_" + s
    return s

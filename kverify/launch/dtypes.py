"""The dtype table: every element type a launch can name, one row each, with the
spellings users write (numpy ``float32``, torch ``torch.float32``, PTX ``f32``, short
``fp32``/``float``/``half``/``bf16``/``i32``...).

Buffers hold raw storage: ``bfloat16`` and the fp8 types are kept as their bit patterns
(``numpy`` has no such types), so their ``np`` column is the unsigned integer of the same
width. ``tmap`` is the ``CUtensorMapDataType`` code (8-bit types go through ``UINT8``),
``dlpack`` the DLPack type code of the TVM-FFI bridge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kverify.semantics.ir import KernelError


@dataclass(frozen=True)
class Dtype:
    name: str  # canonical: the numpy / torch spelling without a prefix
    np: type  # numpy storage type
    itemsize: int
    kind: str  # float | int | uint | bool
    ptx: str  # PTX type of one element
    tmap: int | None  # CUtensorMapDataType
    dlpack: str  # DLPack type code
    aliases: tuple = ()

    @property
    def bits(self) -> int:
        return 8 * self.itemsize

    @property
    def torch(self) -> str:
        return f"torch.{self.name}"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def tmap_enum(self) -> str:
        """The ``CU_TENSOR_MAP_DATA_TYPE_*`` name of ``tmap``."""
        return "CU_TENSOR_MAP_DATA_TYPE_" + TMAP_NAMES[self.tmap]


TMAP_NAMES = ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64",
              "BFLOAT16")

ROWS = (
    Dtype("float16", np.float16, 2, "float", "f16", 6, "kDLFloat", ("fp16", "half", "torch.half")),
    Dtype("bfloat16", np.uint16, 2, "float", "bf16", 9, "kDLBfloat", ("bfloat",)),
    Dtype("float32", np.float32, 4, "float", "f32", 7, "kDLFloat", ("fp32", "float", "single", "torch.float")),
    Dtype("float64", np.float64, 8, "float", "f64", 8, "kDLFloat", ("fp64", "double", "torch.double")),
    Dtype("int8", np.int8, 1, "int", "s8", 0, "kDLInt", ("i8",)),
    Dtype("int16", np.int16, 2, "int", "s16", None, "kDLInt", ("i16", "short", "torch.short")),
    Dtype("int32", np.int32, 4, "int", "s32", 3, "kDLInt", ("i32", "int", "torch.int")),
    Dtype("int64", np.int64, 8, "int", "s64", 5, "kDLInt", ("i64", "long", "torch.long")),
    Dtype("uint8", np.uint8, 1, "uint", "u8", 0, "kDLUInt", ()),
    Dtype("uint16", np.uint16, 2, "uint", "u16", 1, "kDLUInt", ()),
    Dtype("uint32", np.uint32, 4, "uint", "u32", 2, "kDLUInt", ()),
    Dtype("uint64", np.uint64, 8, "uint", "u64", 4, "kDLUInt", ()),
    Dtype("bool", np.bool_, 1, "bool", "pred", None, "kDLBool", ("bool_",)),
    Dtype("float8_e4m3fn", np.uint8, 1, "float", "e4m3", 0, "kDLFloat8_e4m3fn", ("fp8_e4m3", "e4m3fn")),
    Dtype("float8_e5m2", np.uint8, 1, "float", "e5m2", 0, "kDLFloat8_e5m2", ("fp8_e5m2",)),
)

DTYPES: dict[str, Dtype] = {r.name: r for r in ROWS}
#: PTX access types -> the dtype they read as (bit types as unsigned integers)
_BY_PTX: dict[str, Dtype] = {r.ptx: r for r in ROWS if r.kind != "bool"}
_BY_PTX.update({f"b{r.bits}": r for r in ROWS if r.kind == "uint"})
_BY_SPELLING: dict[str, Dtype] = {}
for _r in ROWS:
    for _s in (_r.name, _r.torch, *_r.aliases):
        _BY_SPELLING.setdefault(_s.lower(), _r)
for _s, _r in _BY_PTX.items():
    _BY_SPELLING.setdefault(_s, _r)
_BY_SPELLING.setdefault("pred", DTYPES["bool"])


def names() -> str:
    """The canonical names, for error messages."""
    return ", ".join(DTYPES)


def lookup(name) -> Dtype | None:
    """The row for a spelling (a string, a numpy dtype or a torch dtype), or ``None``."""
    if name is None:
        return None
    if not isinstance(name, str):
        if type(name).__module__.startswith("torch"):
            name = str(name)
        else:
            try:
                name = np.dtype(name).name
            except (TypeError, ValueError):
                return None
    return _BY_SPELLING.get(name.strip().lower().lstrip("."))


def dtype(name, path: str = "<launch>") -> Dtype:
    """The row for ``name``; a ``KernelError`` listing the valid names when there is none."""
    r = lookup(name)
    if r is None:
        raise KernelError(f"unknown dtype {name!r} (valid: {names()}; numpy, torch and PTX spellings "
                          f"such as float32, torch.float32, f32, fp32, bf16 are accepted)", path, 1, 1)
    return r


def of_ptx(ty: str) -> Dtype | None:
    """The buffer dtype a PTX access type reads as (``f32`` -> float32, ``b16`` -> uint16)."""
    return _BY_PTX.get(ty)


def np_dtype(name) -> type:
    """numpy storage type of a dtype spelling."""
    return dtype(name).np


def itemsize(name) -> int:
    return dtype(name).itemsize

"""Byte layout shared by the TMA and wgmma units: element types and the shared-memory swizzle.

Owns the element types the asynchronous units move (their sizes, and the little-endian
encoding of their values: ``bytes_to_values`` / ``values_to_bytes``) and the
``Swizzle<B,4,3>`` address map that TMA tensor maps and wgmma matrix descriptors both name
(``swizzle_offset``, ``swizzle_span``).  Pure numpy; ``tma`` and ``wgmma`` build on it.
See ``docs/async_units.md`` for the formulas and their sources.

Sources: PTX ISA 8.x/9.x §5.5 (tensor-map swizzling modes), §9.7.15 wgmma sub-section
"Shared Memory Matrix Layout" (the swizzle modes of the canonical layouts), the CUDA
driver API ``CU_TENSOR_MAP_SWIZZLE_*``; CuTe ``Swizzle<B,4,3>``.
"""

from __future__ import annotations

import re

import numpy as np

from kverify.launch import dtypes

__all__ = [
    "ELEMENT_SIZE",
    "SWIZZLE_MODES",
    "swizzle_offset",
    "swizzle_span",
    "bytes_to_values",
    "values_to_bytes",
]

# ----------------------------------------------------------------------------------------
# Element types
# ----------------------------------------------------------------------------------------

#: Element size in bytes of every dtype name this module understands: the launch dtypes it
#: models (``kverify.launch.dtypes``; not fp8 or bool) plus tf32, a wgmma operand format
#: stored as 32-bit floats.
ELEMENT_SIZE: dict[str, int] = {
    **{n: dtypes.itemsize(n) for n in ("uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32",
                                       "int32", "float32", "uint64", "int64", "float64")},
    "tf32": 4,
}


def _dtype_name(dtype: str) -> str:
    if not isinstance(dtype, str):
        dtype = np.dtype(dtype).name
    row = dtypes.lookup(dtype)
    name = row.name if row is not None else dtype.lower()
    if name not in ELEMENT_SIZE:
        raise ValueError(
            f"unsupported element type {dtype!r}; known: {sorted(ELEMENT_SIZE)} "
            "(fp8, fp6/fp4 and the packed 16U4/16U6 formats are not modelled)"
        )
    return name


def bytes_to_values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Decode little-endian element bytes into numeric values.

    ``raw`` is a uint8 array whose last axis has length ``ELEMENT_SIZE[dtype]`` (or a flat
    uint8 array whose length is a multiple of it).  Floats come back as float32 (float64
    for ``float64``); ``bfloat16`` is widened exactly to float32; ``tf32`` is the float32
    value with its 13 low mantissa bits cleared (the tensor core reads only 19 bits; see
    ``docs/async_units.md``).  Integers come back in their own numpy integer type.
    """
    name = _dtype_name(dtype)
    size = ELEMENT_SIZE[name]
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    if raw.ndim >= 1 and raw.shape[-1] == size and raw.ndim > 1:
        shape = raw.shape[:-1]
    else:
        if raw.size % size:
            raise ValueError(f"{raw.size} bytes is not a whole number of {name} elements")
        shape = (raw.size // size,)
    flat = raw.reshape(-1)
    if name == "bfloat16":
        bits = flat.view("<u2").astype(np.uint32) << 16
        return bits.view("<f4").astype(np.float32).reshape(shape)
    if name == "tf32":
        bits = flat.view("<u4") & np.uint32(0xFFFFE000)
        return bits.view("<f4").astype(np.float32).reshape(shape)
    np_type = {"float16": "<f2", "float32": "<f4", "float64": "<f8"}.get(name)
    if np_type is None:
        np_type = np.dtype(name).newbyteorder("<").str
    values = flat.view(np_type).reshape(shape)
    if name == "float16":
        return values.astype(np.float32)
    return values.astype(np.dtype(np_type).newbyteorder("="))


def values_to_bytes(values: np.ndarray, dtype: str) -> np.ndarray:
    """Encode values as little-endian element bytes; returns uint8 of shape ``(..., size)``.

    ``bfloat16`` and ``tf32`` round to nearest even (as ``cvt.rn``); this is a convenience
    for tests and fills, not part of any instruction's semantics.
    """
    name = _dtype_name(dtype)
    size = ELEMENT_SIZE[name]
    values = np.asarray(values)
    if name in ("bfloat16", "tf32"):
        f = values.astype("<f4")
        bits = f.view("<u4").astype(np.uint64)
        drop = 16 if name == "bfloat16" else 13
        half = np.uint64(1 << (drop - 1))
        lsb = (bits >> np.uint64(drop)) & np.uint64(1)
        rounded = (bits + half - np.uint64(1) + lsb) >> np.uint64(drop)
        nan = np.isnan(f)
        if name == "bfloat16":
            out = rounded.astype("<u2")
            out = np.where(nan, np.uint16(0x7FFF), out).astype("<u2")
        else:
            out = (rounded << np.uint64(drop)).astype("<u4")
            out = np.where(nan, np.uint32(0x7FFFFFFF), out).astype("<u4")
        return out.view(np.uint8).reshape(values.shape + (size,))
    np_type = {"float16": "<f2", "float32": "<f4", "float64": "<f8"}.get(name)
    if np_type is None:
        np_type = np.dtype(name).newbyteorder("<").str
    out = np.ascontiguousarray(values.astype(np_type))
    return out.view(np.uint8).reshape(values.shape + (size,))


# ----------------------------------------------------------------------------------------
# Swizzle
# ----------------------------------------------------------------------------------------

#: swizzle mode -> (B bits of CuTe's Swizzle<B,4,3>, span in bytes, repeat in bytes)
SWIZZLE_MODES: dict[str, tuple[int, int, int]] = {
    "none": (0, 0, 0),
    "32B": (1, 32, 256),
    "64B": (2, 64, 512),
    "128B": (3, 128, 1024),
}


def _swizzle_mode(mode) -> str:
    if isinstance(mode, str):
        m = mode.strip()
        m = re.sub(r"(?i)^(cu_tensor_map_)?swizzle_?", "", m)
        if m.lower() in ("none", "", "interleave", "0"):
            return "none"
        m = m.upper()
        if m in ("32B", "64B", "128B"):
            return m
    raise ValueError(f"unknown swizzle mode {mode!r}; expected 'none', '32B', '64B' or '128B'")


def swizzle_span(mode) -> int:
    """Swizzle width in bytes (32/64/128), or 0 for ``"none"``."""
    return SWIZZLE_MODES[_swizzle_mode(mode)][1]


def swizzle_offset(offset, mode):
    """Apply a TMA / wgmma swizzle to byte offset(s) (int or integer ndarray).

    Swizzle<B,4,3> of CuTe: XOR address bits ``[4, 4+B)`` with bits ``[7, 7+B)``:

    * 128B = Swizzle<3,4,3>: bits [4:6] ^= bits [7:9]  (16-byte chunk within a 128-byte
      line XOR (line mod 8); pattern repeats every 1024 bytes)
    * 64B  = Swizzle<2,4,3>: bits [4:5] ^= bits [7:8]  (chunk within a 64-byte row XOR
      ((row64 >> 1) mod 4); repeats every 512 bytes)
    * 32B  = Swizzle<1,4,3>: bit 4 ^= bit 7            (repeats every 256 bytes)

    The map is an involution (bits 7.. are unchanged), so it is also the unswizzle.
    The offset must be measured from an address aligned to the repeat (or be the
    absolute shared-memory address).
    """
    bits = SWIZZLE_MODES[_swizzle_mode(mode)][0]
    if bits == 0:
        return offset
    mask = (1 << bits) - 1
    if isinstance(offset, np.ndarray):
        off = offset.astype(np.int64, copy=False)
        return off ^ (((off >> 7) & mask) << 4)
    offset = int(offset)
    return offset ^ (((offset >> 7) & mask) << 4)

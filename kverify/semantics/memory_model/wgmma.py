"""Data semantics of wgmma (``wgmma.mma_async``) as pure numpy.

Owns the 64-bit shared-memory matrix descriptor (``Descriptor``, ``decode_descriptor``,
``encode_descriptor``), the canonical shared-memory operand layouts
(``operand_byte_addresses``, ``load_operand``), the MMA itself (``wgmma_mma``) and the
register fragment layouts of the accumulator D and of A in registers.  It says *what bytes
move where*; it knows nothing about ordering, completion or proxies (those are in
``semantics/memory_model/protocols/``).  Element types and the swizzle are
``byte_layout``'s.  See ``docs/async_units.md`` for the formulas and their sources.

wgmma operands are returned as ``rows x K`` matrices: ``A`` is ``M x K`` and ``B`` is
``N x K`` (``B`` transposed), whatever the shared-memory majorness is.

Sources: PTX ISA 8.x/9.x §9.7.15 wgmma, sub-sections "Register Fragments", "Shared Memory
Matrix Layout" (canonical layouts) and "Matrix Descriptor Format" (their sub-section
numbers differ between ISA releases).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .byte_layout import ELEMENT_SIZE, _dtype_name, _swizzle_mode, bytes_to_values, swizzle_offset, swizzle_span

__all__ = [
    "Descriptor",
    "decode_descriptor",
    "encode_descriptor",
    "operand_byte_addresses",
    "load_operand",
    "wgmma_mma",
    "accumulator_fragment_layout",
    "a_register_fragment_layout",
    "fragment_to_matrix",
    "matrix_to_fragment",
    "MMA_SHAPES",
    "mma_fragment_layout",
    "mma_dims",
    "ldmatrix_element",
    "OPERAND_STORAGE",
]

#: wgmma / mma.sync operand type -> the element type its shared-memory bytes are read as
#: (``byte_layout``): fp8 operands as their bytes (``uint8``), which the caller decodes
#: with ``kverify.semantics.values.narrow`` (this layer does not import the values layer)
OPERAND_STORAGE = {"f16": "float16", "bf16": "bfloat16", "tf32": "tf32", "e4m3": "uint8", "e5m2": "uint8",
                   "s8": "int8", "u8": "uint8"}

# ----------------------------------------------------------------------------------------
# wgmma shared-memory matrix descriptors
# ----------------------------------------------------------------------------------------

# Layout of the 64-bit wgmma matrix descriptor, as in PTX ISA 8.0 - 8.8 §9.7.15 "Matrix
# Descriptor Format" (wgmma; the Blackwell tcgen05 descriptor is different: it
# has a fixed 0b001 in bits 46-48, an LBO mode bit 52 and a 3-bit swizzle in 61-63):
#   bits  0-13  matrix start address, encoded (addr & 0x3FFFF) >> 4
#   bits 16-29  leading dimension byte offset, encoded (lbo & 0x3FFFF) >> 4
#   bits 32-45  stride dimension byte offset, encoded (sbo & 0x3FFFF) >> 4
#   bits 49-51  matrix base offset
#   bits 62-63  swizzle mode: 0 none (interleave), 1 128B, 2 64B, 3 32B
# All other bits are reserved (ignored on decode, written as 0 on encode).
_DESC_SWIZZLE = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
_DESC_SWIZZLE_CODE = {v: k for k, v in _DESC_SWIZZLE.items()}


@dataclass(frozen=True)
class Descriptor:
    """Decoded wgmma matrix descriptor; addresses and offsets in bytes."""

    start_address: int
    lbo: int
    sbo: int
    base_offset: int = 0
    swizzle: str = "none"


def decode_descriptor(desc: int) -> Descriptor:
    """Decode a 64-bit wgmma shared-memory matrix descriptor (see the bit table above)."""
    desc = int(desc) & ((1 << 64) - 1)
    return Descriptor(
        start_address=(desc & 0x3FFF) << 4,
        lbo=((desc >> 16) & 0x3FFF) << 4,
        sbo=((desc >> 32) & 0x3FFF) << 4,
        base_offset=(desc >> 49) & 0x7,
        swizzle=_DESC_SWIZZLE[(desc >> 62) & 0x3],
    )


def encode_descriptor(
    start_address: int | Descriptor, lbo: int = 0, sbo: int = 0, base_offset: int = 0, swizzle: str = "none"
) -> int:
    """Encode a wgmma matrix descriptor.  Accepts a ``Descriptor`` or the fields.

    Raises ValueError when a byte quantity is not 16-byte aligned or does not fit its
    14-bit field (after the >> 4), or the base offset does not fit 3 bits.
    """
    if isinstance(start_address, Descriptor):
        d = start_address
        start_address, lbo, sbo, base_offset, swizzle = d.start_address, d.lbo, d.sbo, d.base_offset, d.swizzle
    fields = {"start_address": start_address, "lbo": lbo, "sbo": sbo}
    for name, v in fields.items():
        if v < 0 or v % 16 or v >= (1 << 18):
            raise ValueError(f"{name}={v:#x} must be a multiple of 16 in [0, 2^18)")
    if not 0 <= base_offset < 8:
        raise ValueError(f"base_offset {base_offset} does not fit 3 bits")
    code = _DESC_SWIZZLE_CODE[_swizzle_mode(swizzle)]
    return (
        (start_address >> 4)
        | ((lbo >> 4) << 16)
        | ((sbo >> 4) << 32)
        | (base_offset << 49)
        | (code << 62)
    )


def operand_byte_addresses(
    desc: Descriptor | int, rows: int, cols_k: int, dtype: str, major: str = "K"
) -> np.ndarray:
    """Absolute shared-memory byte address of each element of a wgmma smem operand.

    Returns an int64 array ``rows x cols_k`` (rows = M for A, N for B): the address of
    the first byte of element (row, k), swizzle included.  Canonical layouts (PTX ISA
    "Shared Memory Matrix Layout"; CuTe notation, T = 16 / element size elements,
    strides in elements, LBO/SBO in bytes):

    K-major   none : ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
              32B  : ((8,m),(T,2k)) : ((2T,SBO),(1,T))      span S = 32
              64B  : ((8,m),(T,2k)) : ((4T,SBO),(1,T))      span S = 64
              128B : ((8,m),(T,2k)) : ((8T,SBO),(1,T))      span S = 128
    MN-major  none : ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
              S    : ((T,S/16,m),(8,k)) : ((1,T,LBO),(S/16 T,SBO))

    i.e. K-major, no swizzle: core matrices of 8 rows x 16 bytes (128 contiguous bytes),
    LBO between core matrices adjacent in K, SBO between those adjacent in M/N;
    K-major swizzled: each row is S bytes, 8-row groups SBO apart, LBO unused (the K
    extent must fit in S bytes); MN-major, no swizzle: core matrices of 8 K-rows x
    16 bytes of M/N, SBO between core matrices adjacent in M/N, LBO between those
    adjacent in K; MN-major swizzled: K-rows of S bytes, M/N atoms of S bytes LBO apart,
    8-K-row groups SBO apart (note the LBO/SBO roles swap with respect to no swizzle).
    The swizzle is then applied to the absolute address (address bits [4:9]).
    """
    if not isinstance(desc, Descriptor):
        desc = decode_descriptor(desc)
    name = _dtype_name(dtype)
    e = ELEMENT_SIZE[name]
    if e not in (1, 2, 4):
        raise ValueError(f"wgmma operands are 8-, 16- or 32-bit, not {name}")
    if desc.base_offset != 0:
        raise NotImplementedError(
            "descriptor base_offset != 0 (matrix start not aligned to the swizzle repeat) is "
            "not modelled; align the operand to 1024/512/256 bytes and use base_offset 0"
        )
    span = swizzle_span(desc.swizzle)
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols_k, dtype=np.int64)[None, :]
    major = major.upper()
    if major == "K":
        kb = k * e
        if span == 0:
            off = (r % 8) * 16 + (r // 8) * desc.sbo + kb % 16 + (kb // 16) * desc.lbo
        else:
            if cols_k * e > span:
                raise ValueError(
                    f"K-major {desc.swizzle} operand: K extent {cols_k} x {e} bytes exceeds the "
                    f"{span}-byte swizzle row (wgmma reads 32 bytes of K per instruction)"
                )
            off = (r % 8) * span + (r // 8) * desc.sbo + kb
    elif major == "MN":
        mb = r * e
        if span == 0:
            off = mb % 16 + (mb // 16) * desc.sbo + (k % 8) * 16 + (k // 8) * desc.lbo
        else:
            off = mb % span + (mb // span) * desc.lbo + (k % 8) * span + (k // 8) * desc.sbo
    else:
        raise ValueError(f"major must be 'K' or 'MN', got {major!r}")
    addr = desc.start_address + off
    return swizzle_offset(addr, desc.swizzle)


def load_operand(
    smem: np.ndarray, desc: Descriptor | int, rows: int, cols_k: int, dtype: str, major: str = "K"
) -> np.ndarray:
    """Gather a wgmma A (``M x K``) or B (``N x K``) operand from shared memory.

    ``smem`` is the CTA's shared memory as bytes, indexed by shared::cta address.
    Returns float32 values (``float16``/``bfloat16`` exactly widened; ``tf32`` with the
    13 low mantissa bits cleared; ``float32`` as stored) or, for 8-bit integer types,
    their integer values.  See ``operand_byte_addresses`` for the layouts.
    """
    sm = np.asarray(smem, dtype=np.uint8).reshape(-1)
    name = _dtype_name(dtype)
    e = ELEMENT_SIZE[name]
    addr = operand_byte_addresses(desc, rows, cols_k, name, major)
    if addr.size and (addr.min() < 0 or addr.max() + e > sm.size):
        raise IndexError(
            f"wgmma operand reaches shared address {int(addr.max()) + e - 1:#x}, beyond the "
            f"{sm.size}-byte shared memory"
        )
    raw = sm[addr[..., None] + np.arange(e)]
    return bytes_to_values(raw, name)


def wgmma_mma(
    d: np.ndarray | None,
    a: np.ndarray,
    b: np.ndarray,
    scale_d: bool,
    neg_a: bool = False,
    neg_b: bool = False,
    dtype=np.float32,
) -> np.ndarray:
    """``D = (+/-A) . (+/-B)^T + (D if scale_d else 0)`` with A ``M x K``, B ``N x K``.

    The products and the sum are computed in float64 and rounded once to ``dtype``
    (float32; float64 leaves the rounding to an f16 accumulator to the caller).  The
    tensor core's accumulation order and intermediate precision are not specified by
    PTX and differ (results typically agree within a few float32 ulps for f16/bf16
    inputs); compare with a tolerance.  With ``scale_d`` false the input D is ignored
    entirely (a NaN in it does not propagate).
    """
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    if a64.ndim != 2 or b64.ndim != 2 or a64.shape[1] != b64.shape[1]:
        raise ValueError(f"expected A (M x K) and B (N x K), got {a64.shape} and {b64.shape}")
    if neg_a:
        a64 = -a64
    if neg_b:
        b64 = -b64
    acc = a64 @ b64.T
    if scale_d:
        if d is None:
            raise ValueError("scale_d is set but no accumulator D was given")
        d64 = np.asarray(d, dtype=np.float64)
        if d64.shape != acc.shape:
            raise ValueError(f"accumulator shape {d64.shape} != {acc.shape}")
        acc = acc + d64
    return acc.astype(dtype)


# ----------------------------------------------------------------------------------------
# Register fragments
# ----------------------------------------------------------------------------------------


def _parse_n(m64nN) -> int:
    if isinstance(m64nN, str):
        m = re.fullmatch(r"(?i)\s*m64n(\d+)(k\d+)?\s*", m64nN)
        if not m:
            raise ValueError(f"expected a shape like 'm64n128k16', got {m64nN!r}")
        n = int(m.group(1))
    else:
        n = int(m64nN)
    if n < 8 or n > 256 or n % 8:
        raise ValueError(f"wgmma N must be a multiple of 8 in [8, 256], got {n}")
    return n


def accumulator_fragment_layout(m64nN) -> np.ndarray:
    """(thread, register) -> (row, col) of the m64nN accumulator D (f32, or f16 elements).

    Returns an int64 array of shape ``(128, N // 2, 2)``.  Thread t of the warpgroup,
    warp w = t // 32, lane l = t % 32, register i in [0, N/2):

        row = 16 w + l // 4 + 8 ((i // 2) mod 2)
        col = 8 (i // 4) + 2 (l mod 4) + (i mod 2)

    (PTX ISA "wgmma .m64nNk* register fragment layout for accumulator matrix D"; the same
    as CuTe's CLayout_64xN.)  For an f16 accumulator the same element order applies,
    two elements per 32-bit register (element i in register i // 2, even i in the low
    half).  ``m64nN`` is N as an int or a shape string such as ``"m64n128k16"``.
    """
    n = _parse_n(m64nN)
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    w, lane = t // 32, t % 32
    row = 16 * w + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + (i % 2)
    return np.stack(np.broadcast_arrays(row, col), axis=-1).astype(np.int64)


def a_register_fragment_layout(dtype: str = "float16") -> np.ndarray:
    """(thread, element) -> (row m, col k) of the A operand of a wgmma with A in registers.

    Returns an int64 array ``(128, E, 2)``; warp w, lane l, element e:

    * 16-bit (f16/bf16), A is 64 x 16, E = 8 (four .b32 registers, element e in register
      e // 2, even e in the low half):
      ``row = 16w + l//4 + 8((e//2) mod 2)``, ``col = 8(e//4) + 2(l mod 4) + e mod 2``
    * tf32, A is 64 x 8, E = 4 (one element per register):
      ``row = 16w + l//4 + 8(e mod 2)``, ``col = (l mod 4) + 4(e//2)``
    * 8-bit (s8/u8), A is 64 x 32, E = 16 (element e is byte e mod 4 of register e // 4):
      ``row = 16w + l//4 + 8((e//4) mod 2)``, ``col = 16(e//8) + 4(l mod 4) + e mod 4``

    Per warp these are the ``mma.m16n8k{16,8,32}`` A-fragment layouts (PTX ISA "wgmma
    register fragment layout for matrix A"; CuTe ALayout_64x16 / 64x8 / 64x32).
    """
    name = _dtype_name(dtype)
    e_size = ELEMENT_SIZE[name]
    t = np.arange(128)[:, None]
    w, lane = t // 32, t % 32
    base_row = 16 * w + lane // 4
    if e_size == 2:
        e = np.arange(8)[None, :]
        row = base_row + 8 * ((e // 2) % 2)
        col = 8 * (e // 4) + 2 * (lane % 4) + e % 2
    elif e_size == 4 and name in ("tf32", "float32"):
        e = np.arange(4)[None, :]
        row = base_row + 8 * (e % 2)
        col = lane % 4 + 4 * (e // 2)
    elif e_size == 1:
        e = np.arange(16)[None, :]
        row = base_row + 8 * ((e // 4) % 2)
        col = 16 * (e // 8) + 4 * (lane % 4) + e % 4
    else:
        raise ValueError(f"no wgmma A-register fragment for {name}")
    return np.stack(np.broadcast_arrays(row, col), axis=-1).astype(np.int64)


def fragment_to_matrix(values: np.ndarray, layout: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Scatter per-thread fragment values ``(128, R)`` into a matrix of ``shape``."""
    values = np.asarray(values)
    out = np.zeros(shape, dtype=values.dtype)
    out[layout[..., 0], layout[..., 1]] = values
    return out


def matrix_to_fragment(matrix: np.ndarray, layout: np.ndarray) -> np.ndarray:
    """Gather a matrix into per-thread fragment values ``(128, R)``."""
    matrix = np.asarray(matrix)
    return matrix[layout[..., 0], layout[..., 1]]


# ----------------------------------------------------------------------------------------
# mma.sync register fragments (warp-level MMA, PTX ISA §9.7.14.5 "Matrix Fragments for mma")
# ----------------------------------------------------------------------------------------

#: (shape, A/B element type) -> elements per .b32 register of A and B
MMA_SHAPES = {
    ("m16n8k16", "f16"): 2, ("m16n8k16", "bf16"): 2,
    ("m16n8k8", "f16"): 2, ("m16n8k8", "bf16"): 2,
    ("m16n8k8", "tf32"): 1, ("m16n8k4", "tf32"): 1,
    ("m16n8k32", "e4m3"): 4, ("m16n8k32", "e5m2"): 4,
    ("m16n8k16", "e4m3"): 4, ("m16n8k16", "e5m2"): 4,
    ("m8n8k16", "s8"): 4, ("m8n8k16", "u8"): 4,
    ("m16n8k16", "s8"): 4, ("m16n8k16", "u8"): 4,
    ("m16n8k32", "s8"): 4, ("m16n8k32", "u8"): 4,
    ("m8n8k32", "s4"): 8, ("m8n8k32", "u4"): 8,
    ("m16n8k32", "s4"): 8, ("m16n8k32", "u4"): 8,
    ("m16n8k64", "s4"): 8, ("m16n8k64", "u4"): 8,
    # .f64 (one element per 64-bit register): m8n8k4 from sm_80, m16n8k{4,8,16} from sm_90
    ("m8n8k4", "f64"): 1, ("m16n8k4", "f64"): 1, ("m16n8k8", "f64"): 1, ("m16n8k16", "f64"): 1,
}


#: integer mma.sync operand types, by width
MMA_INT8, MMA_INT4 = ("s8", "u8"), ("s4", "u4")


def mma_types(ins) -> tuple:
    """The D, A, B, C types of an ``mma`` instruction in source order (``Instr.types()`` leaves
    out .s4/.u4, which are no register types)."""
    from kverify.semantics.ir.types import SCALAR_BITS

    return tuple(x for x in ins.mods if x in SCALAR_BITS or x in MMA_INT4)


def mma_shape(ins) -> str:
    """The ``mMnNkK`` shape modifier of an ``mma`` instruction ("" without one)."""
    return next((x for x in ins.mods if x.startswith("m") and "n" in x and "k" in x), "")


def mma_fragment_layout(shape: str, atype: str) -> tuple[list, list, list]:
    """(row, col) of every fragment element per lane of a warp-level ``mma.sync.aligned``
    with ``.row.col`` A/B and an f32 or f16 accumulator, for the shapes in ``MMA_SHAPES``.

    Returns ``(a, b, c)``: lists indexed by fragment element (A's elements in register
    order, two per ``.f16x2``/``.bf16x2`` register with the even element in the low half,
    one per ``.tf32`` register, four per register of ``.e4m3``/``.e5m2`` with element
    ``i`` in byte ``i mod 4``); each entry is a pair of int arrays over the 32 lanes.
    A is ``M x K`` (row m, col k), B is ``K x N`` (row k, col n), C/D is ``M x N`` (an f16
    C/D holds elements ``2r`` and ``2r + 1`` in the low and high half of register ``r``).
    With ``g = lane >> 2`` (groupID) and ``t = lane % 4`` (threadID_in_group), PTX ISA
    §9.7.14.5.7 (m16n8k8) / §9.7.14.5.8 (m16n8k16) and the m16n8k16 / m16n8k32 sub-sections
    for 8-bit (.s8/.u8/.e4m3/.e5m2) operands:

    * m16n8k16 f16/bf16: A ``(g + 8((i//2) mod 2), 2t + i mod 2 + 8(i//4))`` for i < 8,
      B ``(2t + i mod 2 + 8(i//2), g)`` for i < 4
    * m16n8k8 f16/bf16: A ``(g + 8(i//2), 2t + i mod 2)`` for i < 4, B ``(2t + i, g)`` for i < 2
    * m16n8k8 tf32: A ``(g + 8(i mod 2), t + 4(i//2))`` for i < 4, B ``(t + 4i, g)`` for i < 2
    * m16n8k4 tf32: A ``(g + 8i, t)`` for i < 2, B ``(t, g)``
    * m16n8k32 e4m3/e5m2 (the 8-bit layout of .s8/.u8): A ``(g + 8((i//4) mod 2), 4t + i mod 4
      + 16(i//8))`` for i < 16, B ``(4t + i mod 4 + 16(i//4), g)`` for i < 8
    * m16n8k16 e4m3/e5m2/s8/u8: A ``(g + 8(i//4), 4t + i mod 4)`` for i < 8, B ``(4t + i, g)`` for i < 4
    * m16n8k32 .s4/.u4 (eight elements per register, element i in bits 4(i mod 8)..+3):
      A ``(g + 8(i//8), 8t + i mod 8)`` for i < 16, B ``(8t + i, g)`` for i < 8
    * m16n8k64 .s4/.u4: A ``(g + 8((i//8) mod 2), 8t + i mod 8 + 32(i//16))`` for i < 32,
      B ``(8t + i mod 8 + 32(i//8), g)`` for i < 16
    * m16n8k4 / m16n8k8 / m16n8k16 .f64: A ``(g + 8(i mod 2), t + 4(i//2))`` for i < 2, 4, 8
      (k4: ``(g + 8i, t)``), B ``(t + 4i, g)`` for i < 1, 2, 4
    * C/D of the m16n8 shapes: ``(g + 8(i//2), 2t + i mod 2)`` for i < 4
    * m8n8 shapes (C/D 8 x 8: ``(g, 2t + i)`` for i < 2): m8n8k16 .s8/.u8 A ``(g, 4t + i)``,
      B ``(4t + i, g)`` for i < 4; m8n8k32 .s4/.u4 A ``(g, 8t + i)``, B ``(8t + i, g)`` for
      i < 8; m8n8k4 .f64 A ``(g, t)``, B ``(t, g)``
    """
    if (shape, atype) not in MMA_SHAPES:
        raise ValueError(f"no mma.sync fragment layout for {shape} with .{atype} operands "
                         f"(modelled: {', '.join(f'{s}.{t}' for s, t in MMA_SHAPES)})")
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    if shape.startswith("m8n8"):
        per = {"m8n8k4": 1, "m8n8k16": 4, "m8n8k32": 8}[shape]
        a = [(g, per * t + i) for i in range(per)]
        b = [(per * t + i, g) for i in range(per)]
        return a, b, [(g, 2 * t + i) for i in range(2)]
    c = [(g + 8 * (i // 2), 2 * t + (i % 2)) for i in range(4)]
    if atype == "f64":
        kk = mma_dims(shape)[2]
        if kk == 4:
            return [(g + 8 * i, t) for i in range(2)], [(t, g)], c
        return ([(g + 8 * (i % 2), t + 4 * (i // 2)) for i in range(kk // 2)],
                [(t + 4 * i, g) for i in range(kk // 4)], c)
    if MMA_SHAPES[(shape, atype)] == 8 and shape == "m16n8k32":
        a = [(g + 8 * (i // 8), 8 * t + i % 8) for i in range(16)]
        b = [(8 * t + i, g) for i in range(8)]
    elif MMA_SHAPES[(shape, atype)] == 8:  # m16n8k64, 4-bit
        a = [(g + 8 * ((i // 8) % 2), 8 * t + i % 8 + 32 * (i // 16)) for i in range(32)]
        b = [(8 * t + i % 8 + 32 * (i // 8), g) for i in range(16)]
    elif MMA_SHAPES[(shape, atype)] == 4 and shape == "m16n8k32":
        a = [(g + 8 * ((i // 4) % 2), 4 * t + (i % 4) + 16 * (i // 8)) for i in range(16)]
        b = [(4 * t + (i % 4) + 16 * (i // 4), g) for i in range(8)]
    elif MMA_SHAPES[(shape, atype)] == 4:  # m16n8k16, 8-bit
        a = [(g + 8 * (i // 4), 4 * t + (i % 4)) for i in range(8)]
        b = [(4 * t + i, g) for i in range(4)]
    elif shape == "m16n8k16":
        a = [(g + 8 * ((i // 2) % 2), 2 * t + (i % 2) + 8 * (i // 4)) for i in range(8)]
        b = [(2 * t + (i % 2) + 8 * (i // 2), g) for i in range(4)]
    elif shape == "m16n8k8" and atype != "tf32":
        a = [(g + 8 * (i // 2), 2 * t + (i % 2)) for i in range(4)]
        b = [(2 * t + i, g) for i in range(2)]
    elif shape == "m16n8k8":
        a = [(g + 8 * (i % 2), t + 4 * (i // 2)) for i in range(4)]
        b = [(t + 4 * i, g) for i in range(2)]
    else:  # m16n8k4 tf32
        a = [(g + 8 * i, t) for i in range(2)]
        b = [(t, g)]
    return a, b, c


def mma_dims(shape: str) -> tuple[int, int, int]:
    """(M, N, K) of an ``mNnNkK`` shape string."""
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape)
    if not m:
        raise ValueError(f"expected a shape like 'm16n8k16', got {shape!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def ldmatrix_element(lane, i: int, h: int, trans: bool = False):
    """Where element ``h`` (0: low, 1: high half of the register) of matrix ``i`` held by
    ``lane`` lives, for ``ldmatrix``/``stmatrix`` ``.m8n8`` with 16-bit elements (PTX ISA
    §9.7.9.19 ldmatrix, §9.7.9.20 stmatrix): ``(source lane, byte offset)``, where lane
    ``8i + r`` supplies the address of row ``r`` of matrix ``i``. Lane ``l`` holds row
    ``l // 4``, columns ``2(l mod 4) + h``; ``.trans`` swaps rows and columns. ``lane`` may
    be an int or an integer array."""
    row, col = lane // 4, 2 * (lane % 4) + h
    if trans:
        return 8 * i + col, 2 * row
    return 8 * i + row, 2 * col

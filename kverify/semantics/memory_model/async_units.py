"""Data semantics of Hopper's asynchronous units (TMA tensor copies, wgmma) as pure numpy.

This module says *what bytes move where*; it knows nothing about ordering, completion or
proxies (those are in ``semantics/memory_model/protocols/``).  Every function takes and
returns plain numpy arrays: raw ``uint8`` byte images of global / shared memory, or
matrices of values.  See ``docs/async_units.md`` for the formulas and their sources.

Coordinate-order conventions (the single most common source of bugs here):

* ``TensorMap`` uses the **driver / PTX order, innermost dimension first**:
  ``shape = (dim0 = columns, dim1 = rows, dim2, ...)``, ``box`` likewise, ``strides`` are
  the byte strides of dims 1.. (dim0 is contiguous), and the PTX tensor coordinates
  ``{x, y, ...}`` are ``(column, row, ...)``.
* ``TensorMap.from_spec`` accepts the launch-spec JSON form, which is **row-major,
  outermost first, as numpy**: ``"shape": [rows, cols]``, ``"box": [box_rows, box_cols]``.
  It reverses the lists.
* The shared-memory tile produced by a TMA load is in **row-major box order** (the
  innermost box dimension is contiguous), i.e. a numpy array of shape
  ``tuple(reversed(box))``, before the swizzle is applied to its byte offsets.
* wgmma operands are returned as ``rows x K`` matrices: ``A`` is ``M x K`` and ``B`` is
  ``N x K`` (``B`` transposed), whatever the shared-memory majorness is.

Sources: PTX ISA 8.x/9.x §9.7.9.27 (``cp.async.bulk.tensor``), §5.5 (tensor / tensor-map
semantics: bounding box, traversal stride, out-of-bound access, swizzling modes), the CUDA
driver API ``cuTensorMapEncodeTiled``; §9.7.15 wgmma, sub-sections "Register Fragments",
"Shared Memory Matrix Layout" (canonical layouts) and "Matrix Descriptor Format" (their
sub-section numbers differ between ISA releases).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from kverify.launch import dtypes

__all__ = [
    "ELEMENT_SIZE",
    "SWIZZLE_MODES",
    "TensorMap",
    "swizzle_offset",
    "swizzle_span",
    "bytes_to_values",
    "values_to_bytes",
    "tma_load_tile",
    "tma_store_tile",
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

_FLOAT_TYPES = {"float16", "bfloat16", "float32", "tf32", "float64"}

# Bit pattern written for an out-of-bound element under CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_
# REQUEST_ZERO_FMA.  The driver documentation says "NaN"; the exact payload is not
# documented.  We use the canonical NVIDIA quiet NaN of each width (all mantissa bits set,
# sign clear), which is what the GPU produces for NaN results.
_NAN_BITS = {
    2: np.array([0xFF, 0x7F], dtype=np.uint8),  # 0x7FFF (f16 and bf16)
    4: np.array([0xFF, 0xFF, 0xFF, 0x7F], dtype=np.uint8),  # 0x7FFFFFFF
    8: np.array([0xFF] * 7 + [0x7F], dtype=np.uint8),
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


# ----------------------------------------------------------------------------------------
# Tensor maps (TMA)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorMap:
    """A tiled-mode tensor map (``cuTensorMapEncodeTiled``), innermost dimension first.

    shape:        global dims, innermost first: ``(dim0 = columns, dim1 = rows, ...)``
    strides:      byte strides of dims 1..rank-1 (dim0 is contiguous); multiples of 16
    box:          box dims, innermost first, each in [1, 256]
    swizzle:      "none" | "32B" | "64B" | "128B"
    elem_strides: traversal strides, innermost first, each in [1, 8]; default all 1
    oob_fill:     "zero" | "nan"  (``CU_TENSOR_MAP_FLOAT_OOB_FILL_{NONE,NAN_REQUEST_ZERO_FMA}``)

    The global base address is not stored: the ``global_bytes`` passed to the copy
    functions must start at the tensor's global address (slice the buffer if needed).
    Interleaved layouts, im2col mode and L2 promotion are not modelled.
    """

    dtype: str
    shape: tuple
    strides: tuple
    box: tuple
    swizzle: str = "none"
    elem_strides: tuple = field(default=())
    oob_fill: str = "zero"

    def __post_init__(self) -> None:
        name = _dtype_name(self.dtype)
        object.__setattr__(self, "dtype", name)
        shape = tuple(int(s) for s in self.shape)
        strides = tuple(int(s) for s in self.strides)
        box = tuple(int(b) for b in self.box)
        es = tuple(int(e) for e in self.elem_strides) or (1,) * len(shape)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "box", box)
        object.__setattr__(self, "elem_strides", es)
        object.__setattr__(self, "swizzle", _swizzle_mode(self.swizzle))
        rank = len(shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"tensor map rank must be 1..5 (tiled mode), got {rank}")
        if len(strides) != rank - 1:
            raise ValueError(
                f"strides must give the byte strides of dims 1..{rank - 1} "
                f"({rank - 1} values, innermost first), got {len(strides)}"
            )
        if len(box) != rank or len(es) != rank:
            raise ValueError(f"box and elem_strides must have {rank} entries (innermost first)")
        if any(s < 1 or s > 2**32 for s in shape):
            raise ValueError(f"global dims must be in [1, 2^32], got {shape}")
        if any(s % 16 or s <= 0 or s >= 2**40 for s in strides):
            raise ValueError(
                f"global strides must be positive multiples of 16 bytes below 2^40, got {strides}"
            )
        if any(b < 1 or b > 256 for b in box):
            raise ValueError(f"box dims must be in [1, 256], got {box}")
        if any(e < 1 or e > 8 for e in es):
            raise ValueError(f"element strides must be in [1, 8], got {es}")
        esize = ELEMENT_SIZE[name]
        inner = box[0] * esize
        if inner % 16:
            raise ValueError(
                f"inner box dimension is {box[0]} x {esize} = {inner} bytes; it must be a "
                "multiple of 16 bytes"
            )
        span = swizzle_span(self.swizzle)
        if span and inner > span:
            raise ValueError(
                f"inner box dimension is {inner} bytes ({box[0]} x {name}), larger than the "
                f"{self.swizzle} swizzle span of {span} bytes; use a smaller box[0] "
                f"(at most {span // esize} elements) or a wider swizzle"
            )
        if self.oob_fill not in ("zero", "nan"):
            raise ValueError(f"oob_fill must be 'zero' or 'nan', got {self.oob_fill!r}")
        if self.oob_fill == "nan" and name not in _FLOAT_TYPES:
            raise ValueError("oob_fill='nan' is only allowed for floating-point element types")

    # -- derived quantities --------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZE[self.dtype]

    @property
    def box_counts(self) -> tuple:
        """Elements actually copied per dim, innermost first: ceil(box[i] / elem_strides[i])."""
        return tuple(-(-b // e) for b, e in zip(self.box, self.elem_strides))

    @property
    def tile_shape_rowmajor(self) -> tuple:
        """numpy shape of the shared-memory tile (outermost first)."""
        return tuple(reversed(self.box_counts))

    @property
    def box_bytes(self) -> int:
        """Bytes written to shared memory by one load (the complete-tx byte count).

        Out-of-bound elements are filled and count like in-bound ones.
        """
        return math.prod(self.box_counts) * self.element_size

    # -- launch-spec form ----------------------------------------------------------------
    @classmethod
    def from_spec(cls, d: Mapping, base_shape_rowmajor: Sequence[int] | None = None) -> "TensorMap":
        """Build a tensor map from the launch-spec JSON form (ROW-MAJOR, outermost first).

        ``d`` keys: ``"dtype"``; ``"shape"``: global dims ``[..., rows, cols]`` (optional:
        defaults to ``base_shape_rowmajor``); ``"box"``: ``[..., box_rows, box_cols]``;
        ``"swizzle"`` (default ``"none"``); optional ``"strides"``: byte strides of the
        outer dims, outermost first (``rank - 1`` values); optional ``"elem_strides"``
        (row-major) and ``"oob_fill"``.  Other keys (``"buffer"``) are ignored.

        ``base_shape_rowmajor`` is the row-major shape of the underlying buffer.  When
        ``"strides"`` is absent the buffer is taken to be C-contiguous with that shape
        (so a map whose ``"shape"`` is smaller than the buffer describes its leading
        sub-block); if it is None too, the map's own shape is used.
        """
        dtype = _dtype_name(d["dtype"])
        esize = ELEMENT_SIZE[dtype]
        shape_rm = d.get("shape")
        if shape_rm is None:
            if base_shape_rowmajor is None:
                raise ValueError("tensor-map spec has no 'shape' and no buffer shape was given")
            shape_rm = base_shape_rowmajor
        shape_rm = [int(s) for s in shape_rm]
        rank = len(shape_rm)
        box_rm = [int(b) for b in d["box"]]
        if len(box_rm) != rank:
            raise ValueError(f"'box' {box_rm} must have the rank of 'shape' {shape_rm} (row-major)")
        if "strides" in d and d["strides"] is not None:
            strides_rm = [int(s) for s in d["strides"]]
            if len(strides_rm) != rank - 1:
                raise ValueError(
                    f"'strides' must list the byte strides of the {rank - 1} outer dims, "
                    "outermost first"
                )
            strides = tuple(reversed(strides_rm))
        else:
            layout = [int(s) for s in (base_shape_rowmajor if base_shape_rowmajor is not None else shape_rm)]
            if len(layout) != rank:
                raise ValueError(
                    f"buffer shape {layout} and tensor-map shape {shape_rm} have different ranks; "
                    "give 'strides' explicitly"
                )
            if any(s > b for s, b in zip(shape_rm[1:], layout[1:])):
                raise ValueError(f"tensor-map shape {shape_rm} exceeds buffer shape {layout}")
            # byte stride of row-major dim i = esize * prod(layout[i+1:])
            strides_rm = [esize * math.prod(layout[i + 1 :]) for i in range(rank - 1)]
            strides = tuple(reversed(strides_rm))
        es = d.get("elem_strides", d.get("elementStrides"))
        es = tuple(reversed([int(e) for e in es])) if es else ()
        return cls(
            dtype=dtype,
            shape=tuple(reversed(shape_rm)),
            strides=strides,
            box=tuple(reversed(box_rm)),
            swizzle=d.get("swizzle", "none") or "none",
            elem_strides=es,
            oob_fill=d.get("oob_fill", "zero"),
        )


def _flat_bytes(buf: np.ndarray, writable: bool) -> np.ndarray:
    buf = np.asarray(buf) if not writable else buf
    if not isinstance(buf, np.ndarray):
        raise TypeError("global memory must be a numpy array")
    if buf.dtype == np.uint8 and buf.ndim == 1:
        return buf
    if not buf.flags.c_contiguous:
        raise ValueError("global memory array must be C-contiguous")
    return buf.reshape(-1).view(np.uint8)


def _tile_geometry(tmap: TensorMap, coords: Sequence[int]):
    """Per tile element (row-major box order): global element byte offset and in-bounds mask."""
    if len(coords) != tmap.rank:
        raise ValueError(
            f"tensor map has rank {tmap.rank} but {len(coords)} coordinates were given "
            "(coordinates are innermost first, {x, y, ...})"
        )
    coords = [int(c) for c in coords]
    if any(c < -(2**31) or c >= 2**31 for c in coords):
        raise ValueError("tensor coordinates are signed 32-bit integers")
    counts = tmap.box_counts
    # index vectors per dim, outermost first so that meshgrid gives row-major box order
    axes = [
        coords[i] + np.arange(counts[i], dtype=np.int64) * tmap.elem_strides[i]
        for i in reversed(range(tmap.rank))
    ]
    grids = np.meshgrid(*axes, indexing="ij")  # grids[j] is dim rank-1-j
    inb = np.ones(grids[0].shape, dtype=bool)
    offs = np.zeros(grids[0].shape, dtype=np.int64)
    bstrides = (tmap.element_size,) + tuple(tmap.strides)
    for j, g in enumerate(grids):
        dim = tmap.rank - 1 - j
        inb &= (g >= 0) & (g < tmap.shape[dim])
        offs += g * bstrides[dim]
    return offs.reshape(-1), inb.reshape(-1)


def _smem_positions(tmap: TensorMap, smem_addr: int) -> np.ndarray:
    """Byte position (relative to the destination) of each byte of the dense tile."""
    n = tmap.box_bytes
    dense = np.arange(n, dtype=np.int64)
    if tmap.swizzle == "none":
        return dense
    if smem_addr % 128:
        raise ValueError(f"TMA shared-memory address {smem_addr:#x} must be 128-byte aligned")
    pos = swizzle_offset(dense + smem_addr, tmap.swizzle) - smem_addr
    if pos.min() < 0 or pos.max() >= n:
        raise ValueError(
            f"a {n}-byte {tmap.swizzle}-swizzled tile is not a whole number of 128-byte lines "
            "and its swizzled image leaves the tile; this case is not modelled"
        )
    return pos


def tma_load_tile(
    global_bytes: np.ndarray, tmap: TensorMap, coords: Sequence[int], smem_addr: int = 0
) -> np.ndarray:
    """Bytes that ``cp.async.bulk.tensor`` (tile mode, global -> shared) writes.

    Returns a uint8 array of ``tmap.box_bytes`` bytes, to be stored at the destination.
    Element ``(i_{r-1}, ..., i_1, i_0)`` of the box (row-major box order, ``i_0``
    innermost) reads global element ``coords[d] + i_d * elem_strides[d]`` in every dim d;
    elements with any index outside ``[0, shape[d])`` are filled with zero (or the
    canonical NaN for ``oob_fill="nan"``).  The dense tile's byte offset ``o`` is then
    moved to ``swizzle_offset(smem_addr + o) - smem_addr``.

    ``smem_addr`` is the absolute shared-memory address of the destination (default 0):
    the swizzle pattern is a function of address bits [4:9], so it only matters when
    the destination is not aligned to the pattern repeat (1024/512/256 bytes).  It must
    be 128-byte aligned for swizzled maps.
    """
    gb = _flat_bytes(global_bytes, writable=False)
    esize = tmap.element_size
    offs, inb = _tile_geometry(tmap, coords)
    dense = np.zeros((offs.size, esize), dtype=np.uint8)
    if tmap.oob_fill == "nan":
        dense[:] = _NAN_BITS[esize]
    if inb.any():
        src = offs[inb]
        if src.max() + esize > gb.size:
            raise IndexError(
                f"in-bounds tensor element at byte {int(src.max())} lies outside the "
                f"{gb.size}-byte global buffer (shape/strides do not fit the buffer)"
            )
        dense[inb] = gb[src[:, None] + np.arange(esize)]
    out = np.empty(tmap.box_bytes, dtype=np.uint8)
    out[_smem_positions(tmap, smem_addr)] = dense.reshape(-1)
    return out


def tma_store_tile(
    global_bytes: np.ndarray,
    tmap: TensorMap,
    coords: Sequence[int],
    smem_bytes: np.ndarray,
    smem_addr: int = 0,
) -> None:
    """``cp.async.bulk.tensor`` shared -> global (tile mode): the inverse of the load.

    ``smem_bytes`` holds (at least) ``tmap.box_bytes`` bytes starting at the source
    address; they are unswizzled and each in-bounds element is written to ``global_bytes``
    in place.  Out-of-bound elements are dropped.  ``global_bytes`` must be a writable,
    C-contiguous array (any dtype; it is viewed as bytes).
    """
    gb = _flat_bytes(global_bytes, writable=True)
    smem = np.asarray(smem_bytes, dtype=np.uint8).reshape(-1)
    n = tmap.box_bytes
    if smem.size < n:
        raise ValueError(f"store source has {smem.size} bytes, the box needs {n}")
    esize = tmap.element_size
    dense = smem[_smem_positions(tmap, smem_addr)].reshape(-1, esize)
    offs, inb = _tile_geometry(tmap, coords)
    if not inb.any():
        return
    dst = offs[inb]
    if dst.max() + esize > gb.size:
        raise IndexError(
            f"in-bounds tensor element at byte {int(dst.max())} lies outside the "
            f"{gb.size}-byte global buffer (shape/strides do not fit the buffer)"
        )
    gb[dst[:, None] + np.arange(esize)] = dense[inb]


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
) -> np.ndarray:
    """``D = (+/-A) . (+/-B)^T + (D if scale_d else 0)`` with A ``M x K``, B ``N x K``.

    The products and the sum are computed in float64 and rounded once to float32.  The
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
    return acc.astype(np.float32)


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

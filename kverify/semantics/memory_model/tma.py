"""Data semantics of TMA tensor copies (``cp.async.bulk.tensor``, tile and im2col modes) as pure numpy.

Owns the tiled tensor map (``TensorMap``, as ``cuTensorMapEncodeTiled`` encodes it: shape,
strides, box, traversal strides, swizzle, out-of-bound fill), the im2col tensor map
(``Im2colMap``, as ``cuTensorMapEncodeIm2col`` encodes it: the pixel bounding box,
channels per pixel, pixels per column) and which bytes a bulk tensor copy moves between
global and shared memory (``tma_load_tile`` / ``tma_store_tile`` / ``tma_load_im2col``).  It
says *what bytes move where*; it knows nothing about ordering, completion or proxies (those
are in ``semantics/memory_model/protocols/``).  Global and shared memory are raw ``uint8``
byte images.  Element types and the swizzle are ``byte_layout``'s.  See
``docs/async_units.md`` for the formulas and their sources.

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

Sources: PTX ISA 8.x/9.x §9.7.9.27 (``cp.async.bulk.tensor``), §5.5 (tensor / tensor-map
semantics: bounding box, traversal stride, out-of-bound access, swizzling modes; §5.5.4
"Im2col mode"), the CUDA driver API ``cuTensorMapEncodeTiled`` / ``cuTensorMapEncodeIm2col``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .byte_layout import ELEMENT_SIZE, _dtype_name, _swizzle_mode, swizzle_offset, swizzle_span

__all__ = [
    "Im2colMap",
    "TensorMap",
    "copy_geometry",
    "map_from_spec",
    "tma_load_im2col",
    "tma_load_tile",
    "tma_store_tile",
]

_FLOAT_TYPES = {"float16", "bfloat16", "float32", "tf32", "float64"}

# Bit pattern written for an out-of-bound element under CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_
# REQUEST_ZERO_FMA.  The driver documentation says "NaN" and leaves the payload open; the H200
# writes the 16-bit pattern 0x7FF7 over the element (an f32 element reads 0x7FF77FF7, measured:
# bench/results/conformance_im2col.json, case nhwc_nan_fill; nhwc_f16_nan_fill for 16 bits).
# Every repetition is a quiet NaN of its width (f16, bf16, f32, f64).
_NAN_BITS = {
    2: np.array([0xF7, 0x7F], dtype=np.uint8),  # 0x7FF7 (f16 and bf16)
    4: np.array([0xF7, 0x7F] * 2, dtype=np.uint8),  # 0x7FF77FF7
    8: np.array([0xF7, 0x7F] * 4, dtype=np.uint8),  # 0x7FF77FF77FF77FF7
}


# ----------------------------------------------------------------------------------------
# Tensor maps (TMA)
# ----------------------------------------------------------------------------------------


def _check_global(shape: tuple, strides: tuple) -> None:
    """The global dims and byte strides every tensor map must have (cuTensorMapEncode*)."""
    if any(s < 1 or s > 2**32 for s in shape):
        raise ValueError(f"global dims must be in [1, 2^32], got {shape}")
    if any(s % 16 or s <= 0 or s >= 2**40 for s in strides):
        raise ValueError(f"global strides must be positive multiples of 16 bytes below 2^40, got {strides}")


def _check_fill(dtype: str, oob_fill: str) -> None:
    """The out-of-bound fill of a tensor map: zero, or NaN for floating-point elements."""
    if oob_fill not in ("zero", "nan"):
        raise ValueError(f"oob_fill must be 'zero' or 'nan', got {oob_fill!r}")
    if oob_fill == "nan" and dtype not in _FLOAT_TYPES:
        raise ValueError("oob_fill='nan' is only allowed for floating-point element types")


class _MapBase:
    """What tile and im2col tensor maps share: their global tensor (dtype, shape, strides innermost
    first), traversal strides, swizzle and fill, normalized and checked the same way."""

    def _normalize(self) -> tuple:
        """Set the shared fields to their canonical form; ``(shape, strides, elem_strides)``."""
        object.__setattr__(self, "dtype", _dtype_name(self.dtype))
        shape = tuple(int(s) for s in self.shape)
        strides = tuple(int(s) for s in self.strides)
        es = tuple(int(e) for e in self.elem_strides) or (1,) * len(shape)
        for k, v in (("shape", shape), ("strides", strides), ("elem_strides", es)):
            object.__setattr__(self, k, v)
        object.__setattr__(self, "swizzle", _swizzle_mode(self.swizzle))
        return shape, strides, es

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZE[self.dtype]

    @property
    def extent_bytes(self) -> int:
        """Bytes from the tensor's global address to the end of its last element: no copy
        through the map reads or writes past them (out-of-bound elements are filled or dropped,
        §5.5.5), whatever its coordinates."""
        bstrides = (self.element_size,) + tuple(self.strides)
        return sum((n - 1) * b for n, b in zip(self.shape, bstrides)) + self.element_size

    @staticmethod
    def _spec_shape(d: Mapping, base_shape_rowmajor) -> tuple:
        """``(dtype, element size, row-major shape)`` of a launch-spec map: its ``"shape"``,
        else the buffer's."""
        dtype = _dtype_name(d["dtype"])
        shape_rm = d.get("shape")
        if shape_rm is None:
            if base_shape_rowmajor is None:
                raise ValueError("tensor-map spec has no 'shape' and no buffer shape was given")
            shape_rm = base_shape_rowmajor
        return dtype, ELEMENT_SIZE[dtype], [int(s) for s in shape_rm]


@dataclass(frozen=True)
class TensorMap(_MapBase):
    """A tiled-mode tensor map (``cuTensorMapEncodeTiled``), innermost dimension first.

    shape:        global dims, innermost first: ``(dim0 = columns, dim1 = rows, ...)``
    strides:      byte strides of dims 1..rank-1 (dim0 is contiguous); multiples of 16
    box:          box dims, innermost first, each in [1, 256]
    swizzle:      "none" | "32B" | "64B" | "128B"
    elem_strides: traversal strides, innermost first, each in [1, 8]; default all 1
    oob_fill:     "zero" | "nan"  (``CU_TENSOR_MAP_FLOAT_OOB_FILL_{NONE,NAN_REQUEST_ZERO_FMA}``)

    The global base address is not stored: the ``global_bytes`` passed to the copy
    functions must start at the tensor's global address (slice the buffer if needed).
    Interleaved layouts and L2 promotion are not modelled (im2col maps are ``Im2colMap``).
    """

    mode = "tile"

    dtype: str
    shape: tuple
    strides: tuple
    box: tuple
    swizzle: str = "none"
    elem_strides: tuple = field(default=())
    oob_fill: str = "zero"

    def __post_init__(self) -> None:
        shape, strides, es = self._normalize()
        name = self.dtype
        box = tuple(int(b) for b in self.box)
        object.__setattr__(self, "box", box)
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
        _check_global(shape, strides)
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
        _check_fill(name, self.oob_fill)

    # -- derived quantities --------------------------------------------------------------
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
        dtype, esize, shape_rm = cls._spec_shape(d, base_shape_rowmajor)
        rank = len(shape_rm)
        box_rm = [int(b) for b in d["box"]]
        if len(box_rm) != rank:
            raise ValueError(f"'box' {box_rm} must have the rank of 'shape' {shape_rm} (row-major)")
        strides = _spec_strides(d, shape_rm, esize, base_shape_rowmajor)
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


def _spec_strides(d: Mapping, shape_rm: list, esize: int, base_shape_rowmajor) -> tuple:
    """Byte strides of dims 1.. (innermost first) of a launch-spec tensor map: its
    ``"strides"`` (outermost first), else those of the C-contiguous buffer shape."""
    rank = len(shape_rm)
    if "strides" in d and d["strides"] is not None:
        strides_rm = [int(s) for s in d["strides"]]
        if len(strides_rm) != rank - 1:
            raise ValueError(
                f"'strides' must list the byte strides of the {rank - 1} outer dims, "
                "outermost first"
            )
        return tuple(reversed(strides_rm))
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
    return tuple(reversed(strides_rm))


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
    NaN fill for ``oob_fill="nan"``).  The dense tile's byte offset ``o`` is then
    moved to ``swizzle_offset(smem_addr + o) - smem_addr``.

    ``smem_addr`` is the absolute shared-memory address of the destination (default 0):
    the swizzle pattern is a function of address bits [4:9], so it only matters when
    the destination is not aligned to the pattern repeat (1024/512/256 bytes).  It must
    be 128-byte aligned for swizzled maps.
    """
    return _load(global_bytes, tmap, *_tile_geometry(tmap, coords), smem_addr)


def _load(global_bytes: np.ndarray, tmap, offs: np.ndarray, inb: np.ndarray, smem_addr: int) -> np.ndarray:
    """The ``tmap.box_bytes`` bytes a load writes, from its geometry (per destination element:
    the global byte offset ``offs`` and whether it is inside the tensor, ``inb``):
    out-of-bound elements filled, then swizzled. Tile and im2col mode alike."""
    gb = _flat_bytes(global_bytes, writable=False)
    esize = tmap.element_size
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
    dst, elems = tile_store_elements(tmap, coords, smem_bytes, smem_addr, gb.size)
    if dst.size:
        gb[dst[:, None] + np.arange(tmap.element_size)] = elems


def tile_store_elements(
    tmap: TensorMap, coords: Sequence[int], smem_bytes: np.ndarray, smem_addr: int = 0, global_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """What a tile-mode shared -> global tensor operation (``cp.async.bulk.tensor`` store,
    ``cp.reduce.async.bulk.tensor``) moves: the global byte offset of each in-bounds element
    of the box and its ``element_size`` bytes (``[k, element_size]`` uint8), read from the
    unswizzled ``smem_bytes`` at ``smem_addr``; out-of-bound elements are dropped. With
    ``global_size``, an in-bounds element past that many bytes is an ``IndexError``."""
    smem = np.asarray(smem_bytes, dtype=np.uint8).reshape(-1)
    n = tmap.box_bytes
    if smem.size < n:
        raise ValueError(f"store source has {smem.size} bytes, the box needs {n}")
    esize = tmap.element_size
    dense = smem[_smem_positions(tmap, smem_addr)].reshape(-1, esize)
    offs, inb = _tile_geometry(tmap, coords)
    dst = offs[inb]
    if global_size is not None and dst.size and dst.max() + esize > global_size:
        raise IndexError(
            f"in-bounds tensor element at byte {int(dst.max())} lies outside the "
            f"{global_size}-byte global buffer (shape/strides do not fit the buffer)"
        )
    return dst, dense[inb]


# ----------------------------------------------------------------------------------------
# Im2col mode
# ----------------------------------------------------------------------------------------

#: Per tensor rank: the range of each bounding-box corner coordinate (signed) and of each
#: im2col offset (unsigned) -- PTX ISA §5.5.4.1 "Bounding Box" (the table of corner and
#: offset ranges: 3D 16 bits, 4D 8 bits, 5D 5 bits per spatial dimension) and the CUDA
#: driver API ``cuTensorMapEncodeIm2col`` (``pixelBoxLowerCorner`` / ``pixelBoxUpperCorner``).
IM2COL_CORNER_RANGE = {3: (-(2**15), 2**15 - 1), 4: (-(2**7), 2**7 - 1), 5: (-(2**4), 2**4 - 1)}
IM2COL_OFFSET_RANGE = {3: (0, 2**16 - 1), 4: (0, 2**8 - 1), 5: (0, 2**5 - 1)}
#: ``cuTensorMapEncodeIm2col``: channelsPerPixel in [1, 256], pixelsPerColumn in [1, 1024]
MAX_CHANNELS_PER_PIXEL = 256
MAX_PIXELS_PER_COLUMN = 1024


class Im2colUnsupported(ValueError):
    """A well-formed im2col copy whose case the model does not cover (reported as unknown)."""


@dataclass(frozen=True)
class Im2colMap(_MapBase):
    """An im2col-mode tensor map (``cuTensorMapEncodeIm2col``), innermost dimension first.

    The tensor is a batch of images, NWC (rank 3), NHWC (rank 4) or NDHWC (rank 5):

    shape:              ``(C, W, [H, [D,]] N)`` -- dim 0 is the channel, innermost
    strides:            byte strides of dims 1..rank-1; multiples of 16
    lower / upper:      the pixel bounding box's corners, spatial dims innermost first
                        ``(W, [H, [D]])``: the box spans ``lower[i] .. shape[i+1] - 1 +
                        upper[i]`` (both ends included) in spatial dim i
    channels_per_pixel: channels copied per pixel (``channelsPerPixel``, 1..256)
    pixels_per_column:  pixels copied per load (``pixelsPerColumn``, 1..1024)
    swizzle, oob_fill:  as for ``TensorMap``
    elem_strides:       traversal strides, innermost first; only all-ones is modelled

    One load writes ``pixels_per_column x channels_per_pixel`` elements, pixel-major
    (``box_bytes``, the complete-tx count); ``tma_load_im2col`` says which.
    """

    dtype: str
    shape: tuple
    strides: tuple
    lower: tuple
    upper: tuple
    channels_per_pixel: int
    pixels_per_column: int
    swizzle: str = "none"
    elem_strides: tuple = field(default=())
    oob_fill: str = "zero"

    mode = "im2col"

    def __post_init__(self) -> None:
        shape, strides, es = self._normalize()
        name = self.dtype
        lower = tuple(int(x) for x in self.lower)
        upper = tuple(int(x) for x in self.upper)
        for k, v in (("lower", lower), ("upper", upper), ("channels_per_pixel", int(self.channels_per_pixel)),
                     ("pixels_per_column", int(self.pixels_per_column))):
            object.__setattr__(self, k, v)
        rank = len(shape)
        if not 3 <= rank <= 5:
            raise ValueError(f"an im2col tensor map has rank 3, 4 or 5 (NWC, NHWC, NDHWC), got {rank}")
        if len(strides) != rank - 1:
            raise ValueError(f"strides must give the byte strides of dims 1..{rank - 1} ({rank - 1} values)")
        if len(es) != rank:
            raise ValueError(f"elem_strides must have {rank} entries")
        _check_global(shape, strides)
        lo, hi = IM2COL_CORNER_RANGE[rank]
        for k, c in (("lower_corner", lower), ("upper_corner", upper)):
            if len(c) != rank - 2:
                raise ValueError(f"{k} must give the {rank - 2} spatial dims of a rank-{rank} im2col map, got {len(c)}")
            if any(x < lo or x > hi for x in c):
                raise ValueError(f"{k} values of a rank-{rank} im2col map must be in [{lo}, {hi}], got {list(c)}")
        if not 1 <= self.channels_per_pixel <= MAX_CHANNELS_PER_PIXEL:
            raise ValueError(f"channels_per_pixel must be in [1, {MAX_CHANNELS_PER_PIXEL}], got {self.channels_per_pixel}")
        if not 1 <= self.pixels_per_column <= MAX_PIXELS_PER_COLUMN:
            raise ValueError(f"pixels_per_column must be in [1, {MAX_PIXELS_PER_COLUMN}], got {self.pixels_per_column}")
        if any(e < 1 or e > 8 for e in es):
            raise ValueError(f"element strides must be in [1, 8], got {es}")
        esize = ELEMENT_SIZE[name]
        inner = self.channels_per_pixel * esize
        if inner % 16:
            raise ValueError(f"channels_per_pixel is {self.channels_per_pixel} x {esize} = {inner} bytes; "
                             "it must be a multiple of 16 bytes")
        span = swizzle_span(self.swizzle)
        if span and inner > span:
            raise ValueError(f"a pixel's channels take {inner} bytes, more than the {self.swizzle} swizzle span "
                             f"of {span} bytes")
        if any(self.box_extent(i) < 1 for i in range(rank - 2)):
            raise ValueError(f"the bounding box is empty: lower_corner {list(lower)} and upper_corner {list(upper)} "
                             f"leave no pixel of spatial dims {list(shape[1:-1])} (innermost first)")
        _check_fill(name, self.oob_fill)

    def box_extent(self, i: int) -> int:
        """Pixels of the bounding box along spatial dim ``i`` (0 = W): upper end included."""
        return self.shape[i + 1] - 1 + self.upper[i] - self.lower[i] + 1

    @property
    def box_bytes(self) -> int:
        """Bytes one load writes to shared memory (its complete-tx count): pixelsPerColumn x
        channelsPerPixel x element size; out-of-bound pixels and channels are filled and count."""
        return self.pixels_per_column * self.channels_per_pixel * self.element_size

    @classmethod
    def from_spec(cls, d: Mapping, base_shape_rowmajor: Sequence[int] | None = None) -> "Im2colMap":
        """From the launch-spec form (ROW-MAJOR, outermost first, as numpy): ``"shape"``
        ``[N, (D,) (H,) W, C]``, ``"lower_corner"`` / ``"upper_corner"`` ``[(D,) (H,) W]``,
        ``"channels_per_pixel"``, ``"pixels_per_column"``, optional ``"strides"`` (bytes of
        the outer dims, outermost first), ``"element_strides"``, ``"swizzle"``, ``"oob_fill"``."""
        dtype, esize, shape_rm = cls._spec_shape(d, base_shape_rowmajor)
        strides = _spec_strides(d, shape_rm, esize, base_shape_rowmajor)
        es = d.get("element_strides", d.get("elem_strides"))
        return cls(
            dtype=dtype,
            shape=tuple(reversed(shape_rm)),
            strides=strides,
            lower=tuple(reversed([int(x) for x in d["lower_corner"]])),
            upper=tuple(reversed([int(x) for x in d["upper_corner"]])),
            channels_per_pixel=int(d["channels_per_pixel"]),
            pixels_per_column=int(d["pixels_per_column"]),
            swizzle=d.get("swizzle", "none") or "none",
            elem_strides=tuple(reversed([int(e) for e in es])) if es else (),
            oob_fill=d.get("oob_fill", "zero"),
        )


def map_from_spec(d: Mapping, base_shape_rowmajor: Sequence[int] | None = None):
    """A launch-spec tensor map: ``Im2colMap`` for ``"mode": "im2col"``, else ``TensorMap``."""
    mode = d.get("mode", "tile") or "tile"
    if mode == "im2col":
        return Im2colMap.from_spec(d, base_shape_rowmajor)
    if mode != "tile":
        raise ValueError(f"tensor map mode must be 'tile' or 'im2col', got {mode!r}")
    return TensorMap.from_spec(d, base_shape_rowmajor)


def _im2col_geometry(imap: Im2colMap, coords: Sequence[int], offsets: Sequence[int]):
    """Per element of the destination (pixel-major, channels innermost): the global element
    byte offset and whether it is inside the tensor.

    PTX ISA §5.5.4 (im2col mode), §5.5.4.1 (bounding box), §9.7.9.27 (``im2colOffsets``):
    ``coords = (c, w, [h, [d,]] n)`` name the first pixel, at position ``(w, h, d)`` of the
    bounding box of image ``n``, and the first channel ``c``.  The load walks
    ``pixels_per_column`` pixels of the box in order -- W fastest, then H, then D, then on
    to the box of the next image ``n + 1`` -- and copies channels ``c .. c +
    channels_per_pixel - 1`` of each.  The pixel read for box position ``(w, h, d)`` is
    ``(w + off_w, h + off_h, d + off_d)`` (the filter tap the im2col offsets select).  A
    pixel outside the tensor (any spatial coordinate outside ``[0, dim)``, or ``n`` outside
    ``[0, N)``) and a channel outside ``[0, C)`` are out of bound: filled, never read.
    """
    rank = imap.rank
    nsp = rank - 2
    if len(coords) != rank:
        raise ValueError(f"im2col tensor map has rank {rank} but {len(coords)} coordinates were given "
                         "(innermost first: c, w, [h, [d,]] n)")
    if len(offsets) != nsp:
        raise ValueError(f"a rank-{rank} im2col copy takes {nsp} im2col offsets (w{', h' if nsp > 1 else ''}"
                         f"{', d' if nsp > 2 else ''}), {len(offsets)} were given")
    coords = [int(c) for c in coords]
    offsets = [int(o) for o in offsets]
    if any(c < -(2**31) or c >= 2**31 for c in coords):
        raise ValueError("tensor coordinates are signed 32-bit integers")
    if any(e != 1 for e in imap.elem_strides):
        raise Im2colUnsupported(f"im2col element strides {list(imap.elem_strides)} (innermost first) other "
                                "than 1 are not modelled")
    olo, ohi = IM2COL_OFFSET_RANGE[rank]
    if any(o < olo or o > ohi for o in offsets):
        raise Im2colUnsupported(f"im2col offsets {offsets} outside [{olo}, {ohi}], the range of a rank-{rank} "
                                "copy (PTX ISA §5.5.4.1): not modelled")
    c0, sp, n0 = coords[0], coords[1:-1], coords[-1]
    ext = [imap.box_extent(i) for i in range(nsp)]
    rel = [sp[i] - imap.lower[i] for i in range(nsp)]
    if any(r < 0 or r >= e for r, e in zip(rel, ext)):
        raise Im2colUnsupported(
            f"im2col starting pixel {sp} (spatial, innermost first) lies outside the bounding box "
            f"{[(imap.lower[i], imap.lower[i] + ext[i] - 1) for i in range(nsp)]}: not modelled")
    per_image = math.prod(ext)
    start = n0 * per_image
    mul = 1
    for i in range(nsp):
        start += rel[i] * mul
        mul *= ext[i]
    p = start + np.arange(imap.pixels_per_column, dtype=np.int64)  # linear box index of each pixel
    n = p // per_image
    inb = (n >= 0) & (n < imap.shape[-1])
    offs = n * imap.strides[-1]
    rem = p % per_image
    for i in range(nsp):
        pos = imap.lower[i] + rem % ext[i] + offsets[i]
        rem = rem // ext[i]
        inb &= (pos >= 0) & (pos < imap.shape[i + 1])
        offs = offs + pos * imap.strides[i]
    ch = c0 + np.arange(imap.channels_per_pixel, dtype=np.int64)
    chin = (ch >= 0) & (ch < imap.shape[0])
    offs_e = offs[:, None] + ch[None, :] * imap.element_size
    inb_e = inb[:, None] & chin[None, :]
    return offs_e.reshape(-1), inb_e.reshape(-1)


def copy_geometry(tmap, coords: Sequence[int], offsets: Sequence[int] = ()):
    """Global element byte offsets and in-bound mask of one copy, in destination order, for
    either kind of map (tile: ``offsets`` must be empty)."""
    if isinstance(tmap, Im2colMap):
        return _im2col_geometry(tmap, coords, offsets)
    return _tile_geometry(tmap, coords)


def tma_load_im2col(
    global_bytes: np.ndarray, imap: Im2colMap, coords: Sequence[int], offsets: Sequence[int], smem_addr: int = 0
) -> np.ndarray:
    """Bytes that ``cp.async.bulk.tensor.{3d,4d,5d}...im2col`` (global -> shared) writes.

    Returns ``imap.box_bytes`` bytes: ``pixels_per_column`` rows of ``channels_per_pixel``
    elements (the pixels in traversal order, see ``_im2col_geometry``), out-of-bound elements
    zero (or the NaN fill for ``oob_fill="nan"``), then swizzled as a tile-mode load is
    (the dense byte offset ``o`` moves to ``swizzle_offset(smem_addr + o) - smem_addr``).
    """
    return _load(global_bytes, imap, *_im2col_geometry(imap, coords, offsets), smem_addr)

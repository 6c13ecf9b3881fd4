"""The kernel parameter buffer of a launch: its bytes and where its tensor maps sit (PTX ISA
§5.1.6 kernel parameters, §5.5.8 tensor maps; the CUDA driver's ``cuLaunchKernel`` copies the
parameter values into this buffer in declaration order, each at its alignment).

Each parameter comes from the launch spec:

* a pointer parameter whose name is a buffer of the launch: that buffer's global address;
* a scalar in ``args``: its bits (``layout.arg_bits``), masked to the parameter's size;
* a ``.b8 x[N]`` parameter named in ``tensormaps``: a tensor map (the interpreter keeps the
  map's description beside the buffer; the first 8 bytes hold ``TMAP_MAGIC | offset``);
* a ``.b8 x[N]`` (or any) parameter given in ``args`` as ``{"bytes": "<hex>"}`` (what a
  launch capture records): those bytes, zero-padded to the parameter's size;
* or as ``{"struct": {"<offset>": FIELD}}``: typed fields at byte offsets (``schema`` lists
  them) -- scalars, pointers into named buffers (``{"ptr": "A"}`` or ``{"ptr": {"buffer":
  "A", "offset": 64}}``, buffers that need no parameter of their own), and tensor maps
  (64-byte aligned). Bytes no field covers are zero.

A struct that does not fit its parameter, a pointer into a buffer the launch does not have,
or a tensor map naming one, is a ``KernelError`` (exit 2).

A struct the launch gives no bytes for may get its pointer fields from the kernel itself
(``with_struct_pointers``: the slots it uses as global addresses, each into a buffer of its own
that the caller sizes from the accesses); its other bytes, if the kernel reads them, have no
value (a missing parameter, as for a scalar the launch leaves out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kverify.semantics.ir import KernelError

from . import dtypes, schema
from kverify.semantics.ir.types import SCALAR_BITS

from .layout import GLOBAL_BASE, TMAP_MAGIC, arg_bits, param_offsets
from .spec import LaunchSpec, lookup, param_key


@dataclass(frozen=True)
class TensorMapSlot:
    """A tensor map in the parameter buffer: its launch-spec form (strides in bytes), the
    buffer it maps, and a label for messages (``tmap`` or ``p.struct.128``)."""

    spec: dict
    buffer: str
    label: str


@dataclass(frozen=True)
class ParamImage:
    """The bytes of the kernel parameter buffer, each parameter's ``(offset, size)``, the
    tensor maps by their offset in the buffer, and the pointer fields read out of structs
    (``{offset: (buffer, byte offset)}``, for the symbolic engine)."""

    data: np.ndarray
    offsets: dict
    tensormaps: dict
    pointers: dict


def is_by_value(v) -> bool:
    """True when an ``args`` value is a by-value parameter (raw bytes or typed fields)."""
    return isinstance(v, dict) and ("bytes" in v or "struct" in v)


def scalar_misfit(v, tyname: str) -> str | None:
    """Why the number ``v`` is no value of a ``.tyname`` parameter (``None`` when it is one): an
    integer parameter takes an integer that fits its width, read as signed or unsigned (``-1``
    for ``.u32`` is its all-ones bits, as a C caller's conversion gives); a floating-point one a
    number that stays finite in its format. A value the kernel would not see would otherwise
    stand in the verdict's scope."""
    bits = SCALAR_BITS.get(tyname)
    if tyname in ("f16", "bf16", "f32", "f64"):
        if isinstance(v, bool):
            return f"expected a number, got {v}"
        exp = {"f16": (10, 0x1F), "bf16": (7, 0xFF), "f32": (23, 0xFF), "f64": (52, 0x7FF)}[tyname]
        with np.errstate(over="ignore"):
            overflows = (arg_bits(v, tyname) >> exp[0]) & exp[1] == exp[1]
        return f"{v} is not finite in .{tyname}" if overflows and math.isfinite(v) else None
    if bits is None:
        return None
    if isinstance(v, float) or isinstance(v, bool):
        return f"{v} is not an integer"
    if not -(1 << (bits - 1)) <= v <= (1 << bits) - 1:
        return f"{v} does not fit {bits} bits (-{1 << (bits - 1)}..{(1 << bits) - 1})"
    return None


def _err(spec: LaunchSpec, keys, msg):
    return KernelError(f"launch spec: {schema._keypath(keys)}: {msg}", spec.path, *schema.locate(spec.path, keys))


def _spec_key(spec: LaunchSpec, kernel, i: int) -> str:
    """The key of ``args`` under which parameter ``i`` is given (for messages)."""
    p = kernel.params[i]
    for key in (p.source_name, p.name, str(i)):
        if key is not None and key in spec.args:
            return key
    return param_key(kernel, i)


def _given_once(spec: LaunchSpec, kernel, i: int, is_buffer: bool) -> None:
    """Parameter ``i`` is given one value: under one of its keys (CUDA name, PTX name, position)
    and in one of ``args`` / ``buffers`` / ``tensormaps`` (the first key found won, and the
    interpreter and the SMT checker could each take another)."""
    p = kernel.params[i]
    keys = list(dict.fromkeys(k for k in (p.source_name, p.name, str(i)) if k is not None))
    given = [("args", k) for k in keys if k in spec.args] + [("tensormaps", k) for k in keys if k in spec.tensormaps]
    given += [("buffers", k) for k in keys if is_buffer and k in spec.buffers]
    if len(given) > 1:
        raise _err(spec, list(given[1]), f"parameter {param_key(kernel, i)} is given twice ("
                   + " and ".join(f"{sect}.{k}" for sect, k in given) + "): give it once")


def tensormap_spec(t: dict, buffers: dict, spec: LaunchSpec, keys) -> TensorMapSlot:
    """A tensor map's launch-spec form with element strides (innermost 1) turned into byte
    strides, after checking the buffer it names."""
    buf = t.get("buffer")
    if buf not in buffers:
        raise _err(spec, [*keys, "buffer"], f"tensor map names buffer {buf!r}, which is not a buffer of the launch "
                   f"(buffers: {', '.join(map(str, buffers)) or 'none'})")
    t = dict(t)
    st = t.get("strides")
    _, _, bshape = buffers[buf]
    if st is not None and len(st) == len(t.get("shape") or bshape) and st and st[-1] == 1:
        esz = dtypes.itemsize(t["dtype"])
        t["strides"] = [int(x) * esz for x in st[:-1]]  # element strides, innermost 1
    return TensorMapSlot(t, buf, schema._keypath(keys))


def _pointer(v, buffers, spec, keys):
    name, extra = (v["buffer"], int(v.get("offset", 0))) if isinstance(v, dict) else (v, 0)
    if name not in buffers:
        raise _err(spec, keys, f"pointer into buffer {name!r}, which is not a buffer of the launch "
                   f"(buffers: {', '.join(map(str, buffers)) or 'none'}; declare it in \"buffers\")")
    return name, extra


def _field_bytes(kind, v) -> bytes:
    size, cls = schema.SCALAR_KINDS[kind]
    if cls == "float":
        return np.array(v, {2: np.float16, 4: np.float32, 8: np.float64}[size]).tobytes()
    return int(v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def struct_bytes(fields: dict, size: int, buffers: dict, spec: LaunchSpec, keys) -> tuple[bytearray, dict, dict]:
    """The ``size`` bytes of a by-value struct, its tensor maps ``{offset: TensorMapSlot}``
    and its pointers ``{offset: (buffer, byte offset)}`` (offsets within the struct)."""
    out = bytearray(size)
    tmaps, ptrs = {}, {}
    for off_s, f in fields.items():
        off = int(off_s)
        (kind, v), = f.items()
        width = 8 if kind == "ptr" else schema.TENSORMAP_BYTES if kind == "tensormap" else schema.SCALAR_KINDS[kind][0]
        fk = [*keys, off_s]
        if off + width > size:
            raise _err(spec, fk, f"a {width}-byte field at offset {off} runs past the parameter's {size} bytes")
        if kind == "ptr":
            name, extra = _pointer(v, buffers, spec, [*fk, "ptr"])
            addr = GLOBAL_BASE + buffers[name][0] + extra
            out[off:off + 8] = (addr & (2 ** 64 - 1)).to_bytes(8, "little")
            ptrs[off] = (name, extra)
        elif kind == "tensormap":
            tmaps[off] = tensormap_spec(v, buffers, spec, [*fk, "tensormap"])
        else:
            out[off:off + width] = _field_bytes(kind, v)
    return out, tmaps, ptrs


def with_struct_pointers(kernel, spec: LaunchSpec, found: dict, fields: dict | None = None) -> LaunchSpec:
    """``spec`` with a pointer field for each 8-byte slot the kernel uses as a global address in
    a by-value struct parameter the launch gives no bytes for. ``found``: ``{parameter index:
    {"pointers": [byte offsets], "other_bytes": bool}}`` (whether the kernel reads other bytes
    of it); ``fields``: ``{parameter index: {offset: field path}}`` from the source, when known.

    Each slot points into a buffer of its own, named ``<param>.<field>`` (``A.p``; ``A+8`` when
    the source's layout is not known), which the caller sizes from the kernel's accesses like a
    pointer parameter's buffer. The struct's ``args`` entry lists the pointer fields (bytes no
    field covers are zero, as for any struct field list); when the kernel reads other bytes,
    ``struct_pointers`` says so and they have no value: the symbolic checkers take them as free
    (every value) and ``param_bytes`` reports them missing, as for a scalar the launch leaves out."""
    if not found:
        return spec
    from dataclasses import replace

    taken = set(spec.buffers) | {param_key(kernel, i) for i in range(len(kernel.params))}
    args, info = dict(spec.args), dict(spec.struct_pointers)
    for i, f in sorted(found.items()):
        key = param_key(kernel, i)
        names = {}
        for off in sorted(f["pointers"]):
            path = (fields or {}).get(i, {}).get(off)
            name = f"{key}.{path}" if path else f"{key}+{off}"
            n = 2
            while name in taken:
                name, n = f"{key}+{off}#{n}", n + 1
            taken.add(name)
            names[off] = name
        args[key] = {"struct": {str(off): {"ptr": name} for off, name in names.items()}}
        info[key] = {"pointers": names, "other_bytes": bool(f.get("other_bytes"))}
    return replace(spec, args=args, struct_pointers=info)


def param_bytes(kernel, spec: LaunchSpec, buffers: dict) -> ParamImage:
    """The kernel parameter buffer of ``kernel`` under ``spec``, with the launch's buffers
    placed at ``buffers`` (``{name: (offset in the global image, dtype, shape)}``; a pointer
    is ``GLOBAL_BASE + offset``)."""
    offsets, total = param_offsets(kernel)
    data = np.zeros(max(total, 1), np.uint8)
    tensormaps, pointers = {}, {}
    missing = []
    for i, p in enumerate(kernel.params):
        start, size = offsets[p.name]
        name = param_key(kernel, i)
        _given_once(spec, kernel, i, name in buffers and not p.array)
        t = lookup(spec.tensormaps, kernel, i)
        v = lookup(spec.args, kernel, i)
        if t is not None:
            if size < schema.TENSORMAP_BYTES:
                raise _err(spec, ["tensormaps", name], f"parameter {name} is {size} bytes, a tensor map takes "
                           f"{schema.TENSORMAP_BYTES}")
            tensormaps[start] = tensormap_spec(t, buffers, spec, ["tensormaps", name])
            data[start:start + 8] = np.frombuffer((TMAP_MAGIC | start).to_bytes(8, "little"), np.uint8)
            continue
        inferred = spec.struct_pointers.get(name) if spec.struct_pointers else None
        if inferred is not None and inferred["other_bytes"]:
            # the kernel reads bytes of the struct besides the pointer fields kverify gave it
            missing.append(f"{name} (its bytes besides the pointer field(s) {', '.join(inferred['pointers'].values())})")
            continue
        if inferred is not None and any(b not in buffers for b in inferred["pointers"].values()):
            missing.append(f"{name} (buffers for its pointer field(s) {', '.join(inferred['pointers'].values())})")
            continue
        if is_by_value(v):
            keys = ["args", _spec_key(spec, kernel, i)]
            if "bytes" in v:
                raw = bytes.fromhex(v["bytes"].replace(" ", "").removeprefix("0x"))
                if len(raw) > size:
                    raise _err(spec, [*keys, "bytes"], f"{len(raw)} bytes given for parameter {name} of {size} bytes")
                data[start:start + len(raw)] = np.frombuffer(raw, np.uint8)
                continue
            raw, tms, ptrs = struct_bytes(v["struct"], size, buffers, spec, [*keys, "struct"])
            data[start:start + size] = np.frombuffer(bytes(raw), np.uint8)
            for off, slot in tms.items():
                tensormaps[start + off] = slot
                data[start + off:start + off + 8] = np.frombuffer((TMAP_MAGIC | (start + off)).to_bytes(8, "little"),
                                                                  np.uint8)
            pointers.update({start + off: ptr for off, ptr in ptrs.items()})
            continue
        if name in buffers and not p.array:
            value = GLOBAL_BASE + buffers[name][0]
        elif v is None:
            missing.append(name)
            continue
        elif p.array:
            raise _err(spec, ["args", _spec_key(spec, kernel, i)],
                       f"parameter {name} is a {size}-byte by-value parameter: give it in \"tensormaps\", or as "
                       f"{{\"bytes\": HEX}} or {{\"struct\": {{OFFSET: FIELD}}}}, got {schema._show(v)}")
        else:
            if isinstance(v, str):
                raise _err(spec, ["args", _spec_key(spec, kernel, i)], f"expected a number, got {schema._show(v)}")
            why = scalar_misfit(v, p.type.name)
            if why:
                raise _err(spec, ["args", _spec_key(spec, kernel, i)], f"parameter {name} is .{p.type.name}: {why}")
            value = arg_bits(v, p.type.name)
        data[start:start + size] = np.frombuffer(int(value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"),
                                                 np.uint8)
    if missing:
        raise KernelError(f"launch spec: no value for parameter(s) {', '.join(missing)} of {kernel.name} "
                          f"(give them in \"args\", \"buffers\" or \"tensormaps\")", spec.path, 1, 1)
    return ParamImage(data, offsets, tensormaps, pointers)


__all__ = ["ParamImage", "TensorMapSlot", "is_by_value", "param_bytes", "struct_bytes", "tensormap_spec",
           "with_struct_pointers"]

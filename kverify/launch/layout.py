"""Where a launch puts things: the address windows of the interpreter's (and the symbolic
engine's) memory, the placement of buffers in global memory, the kernel parameter
buffer's layout and the bytes of a scalar argument (PTX ISA §5.1 state spaces, §6.4.1
generic addressing, §5.1.6 kernel parameters).

Address encoding:
  global          GLOBAL_BASE + offset into the global image (what pointer params hold)
  shared::cta     offset in the CTA's shared memory, < 2**24
  shared::cluster ((rank + 1) << 24) | offset   (plain shared::cta offsets mean the own CTA)
  generic         SHARED_WINDOW + a shared::cluster address, LOCAL_WINDOW + offset,
                  PARAM_WINDOW + offset, CONST_WINDOW + offset, or a global address
  code            CODE_WINDOW + 16 * n for the n-th ``.func`` of the module: the value
                  ``mov.u64 %rd, func;`` gives (a function pointer, §7.2 function declarations
                  and definitions; §9.7.12.5 call through a register)
"""
from __future__ import annotations

import numpy as np

GLOBAL_BASE = 0x0000_1000_0000
SHARED_WINDOW = 0x7000_0000_0000
LOCAL_WINDOW = 0x7100_0000_0000
PARAM_WINDOW = 0x7200_0000_0000
CONST_WINDOW = 0x7300_0000_0000
CODE_WINDOW = 0x7400_0000_0000
WINDOW_SIZE = 1 << 40
CTA_SHIFT = 24
CTA_MASK = (1 << CTA_SHIFT) - 1
BUFFER_ALIGN = 256  # launch buffers start on this boundary of the global image
#: unmapped bytes after every global buffer and global variable (and, in the interpreter, after
#: every shared variable): an overflow of up to this many bytes lands in no allocation and
#: faults as ``bounds`` instead of reading or writing the neighbour (see docs/races.md)
RED_ZONE = 1024
SHARED_RED_ZONE = 256  # the same after every shared variable (shared memory is small)
TMAP_MAGIC = 0x4B564D41_50000000  # tag written into by-value tensor-map params


def function_addresses(module) -> dict:
    """``{name: address}`` of the module's ``.func`` definitions (``CODE_WINDOW``)."""
    funcs = [k for k in module.kernels if not k.is_entry]
    return {k.name: CODE_WINDOW + 16 * i for i, k in enumerate(funcs)}


def align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def next_buffer(off: int, nbytes: int) -> int:
    """Offset of the buffer placed after one of ``nbytes`` at ``off``, past a red zone."""
    return align_up(off + max(nbytes, 1) + RED_ZONE, BUFFER_ALIGN)


def param_offsets(kernel) -> tuple[dict, int]:
    """``({param name: (offset, size)}, total bytes)`` of the kernel parameter buffer: each
    parameter at its ``.align`` (else its natural alignment), in declaration order."""
    out = {}
    off = 0
    for p in kernel.params:
        off = align_up(off, p.align or max(p.type.bits // 8, 1))
        out[p.name] = (off, p.size)
        off += p.size
    return out, off


def arg_bits(v, tyname: str) -> int:
    """The bits of scalar argument ``v`` for a parameter of PTX type ``tyname``: floats (and
    integers given for f32/f64 parameters) as IEEE bits, integers as themselves (negative
    ones are masked to the parameter's size by the caller)."""
    if isinstance(v, bool):
        return int(v)
    if tyname in ("f16", "f32", "f64"):
        f = {"f16": (np.float16, np.uint16), "f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}[tyname]
        return int(f[0](v).view(f[1]))
    if tyname == "bf16":  # the upper half of the f32 bits, rounded to nearest even
        b = int(np.float32(v).view(np.uint32))
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    if isinstance(v, float):
        return int(np.float32(v).view(np.uint32))
    return int(v)


def shared_layout(module, kernel, dynamic_smem: int, red_zone: int = SHARED_RED_ZONE) -> tuple[dict, int]:
    """Where each shared variable of ``kernel`` lives: ``({name: (offset, size)}, total bytes)``.
    Static variables in declaration order (module scope first) at their alignment, each
    followed by ``red_zone`` bytes that belong to no variable (an overflow then lands nowhere);
    dynamic shared memory (``extern`` variables) last, 1024-aligned, ``dynamic_smem`` bytes."""
    out, off, dyn = {}, 0, []
    for v in list(module.vars) + list(kernel.vars):
        if v.space != "shared":
            continue
        if v.extern:
            dyn.append(v)
            continue
        off = align_up(off, v.align or max(v.type.bits // 8, 1))
        out[v.name] = (off, v.size)
        off += v.size + red_zone
    if dyn:
        off = align_up(off, 1024)
        for v in dyn:
            out[v.name] = (off, dynamic_smem)
        off += dynamic_smem
    return out, off


def local_layout(kernel) -> tuple[dict, int]:
    """Where each local variable of ``kernel`` lives in a thread's frame: ``({name: (offset,
    size)}, frame bytes)``."""
    out, off = {}, 0
    for v in kernel.vars:
        if v.space == "local":
            off = align_up(off, v.align or 8)
            out[v.name] = (off, v.size)
            off += v.size
    return out, off

"""Lane selection of ``shfl.sync`` (PTX ISA §9.7.9.6), written once for the interpreter
(numpy lanes) and the symbolic executor (Python ints per lane)."""
from __future__ import annotations

import numpy as np


def shfl_source(mode: str, lane, b, c):
    """``(source lane, in range)`` for ``shfl.sync.<mode>`` with lane operand ``b`` and
    clamp/segment-mask operand ``c``; out of range reads the lane's own value."""
    b = b & 0x1F  # only b[4:0] names a lane or offset (the PTX pseudocode's bval = b[4:0])
    clamp, seg = c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & seg) | (clamp & ~seg)
    if mode == "up":
        j = lane - b
        ok = j >= max_lane
    elif mode == "down":
        j, ok = lane + b, lane + b <= max_lane
    elif mode == "bfly":
        j, ok = lane ^ b, (lane ^ b) <= max_lane
    elif mode == "idx":
        j = (lane & seg) | (b & ~seg)
        ok = j <= max_lane
    else:
        raise ValueError(f"shfl mode {mode!r}")
    if isinstance(j, np.ndarray):
        return np.where(ok, j, lane) & 31, ok
    return (j if ok else lane) & 31, ok

"""Memory of one launch: global allocations, per-CTA shared memory (distributed shared memory
across a cluster), per-thread local memory, the kernel parameter buffer (including
by-value tensor maps) and const banks, and the generic address space that windows onto
them (PTX ISA §5.1 state spaces, §6.4.1 generic addressing, §9.7.9.21 cvta, §9.7.9.22 mapa).

The address encoding (windows, CTA rank bits) is ``kverify.launch.layout``'s; it is
re-exported here for the handlers.
"""
from __future__ import annotations

import numpy as np

from kverify.launch.layout import (CONST_WINDOW, CTA_MASK, CTA_SHIFT, GLOBAL_BASE, LOCAL_WINDOW,  # noqa: F401
                                   PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE, align_up)

from .hb import Shadow


class Fault(Exception):
    """An access outside every allocation (``bounds``) or an unsupported address."""

    def __init__(self, message, lane=-1, address=None):
        super().__init__(message)
        self.lane, self.address = lane, address


#: the little-endian word of each access size: an aligned access reads the image through it
_WORD = {2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def _words(data: np.ndarray, offs: np.ndarray, nbytes: int):
    """(the image as ``nbytes``-wide little-endian words, the word index of each offset) when
    every offset is aligned to ``nbytes`` and the image divides into such words, else None."""
    dt = _WORD.get(nbytes)
    if dt is None or data.size % nbytes or (offs % nbytes).any():
        return None
    return data.view(dt), offs // nbytes


def load_bytes(data: np.ndarray, offs: np.ndarray, nbytes: int) -> np.ndarray:
    """Little-endian values of ``nbytes`` (<= 8) at byte offsets ``offs`` (uint64)."""
    if nbytes == 1:
        return data[offs].astype(np.uint64)
    words = _words(data, offs, nbytes)
    if words is not None:
        return words[0][words[1]].astype(np.uint64)
    idx = offs[:, None] + np.arange(nbytes)[None, :]
    b = data[idx].astype(np.uint64)
    out = np.zeros(len(offs), np.uint64)
    for i in range(nbytes):
        out |= b[:, i] << np.uint64(8 * i)
    return out


def store_bytes(data: np.ndarray, offs: np.ndarray, nbytes: int, vals: np.ndarray) -> None:
    """Store the low ``nbytes`` of each of ``vals`` at byte offsets ``offs``, little-endian
    (offsets in order: a later lane's bytes win)."""
    vals = np.asarray(vals).astype(np.uint64)
    words = _words(data, offs, nbytes) if nbytes > 1 else (data, offs)
    if words is not None:
        words[0][words[1]] = vals.astype(words[0].dtype)
        return
    for i in range(nbytes):
        data[offs + i] = ((vals >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)


def proxy_space(region) -> str:
    """The class of state space a proxy fence names that covers ``region``: global or shared."""
    return "global" if region.space == "global" else "shared"


class Region:
    """A byte image with its race shadow and the allocations (name, start, size) in it; an
    access is in bounds only inside one allocation (global buffers and variables, shared
    variables)."""

    def __init__(self, name: str, space: str, size: int, dense_agents=None, whole: bool = False):
        self.name, self.space = name, space
        self.data = np.zeros(max(size, 1), np.uint8)
        self.size = size
        self.shadow = Shadow(size, "shared" if space == "shared" else space, dense_agents, whole)
        self.allocs: list[tuple[str, int, int]] = []
        self.cta = None  # a CTA's shared memory: that CTA (``state.CTA``)

    def forget_races(self) -> None:
        """A fresh race shadow (no access recorded): for when no later access can race with the
        recorded ones."""
        if self.shadow is not None:
            self.shadow = Shadow(self.size, self.space, None)

    def untrack(self) -> None:
        """No race shadow at all (``shadow`` None): for a region whose race freedom was proved
        for the launch before the run (``run_kernel(global_races_proved=True)``); its accesses
        are still bounds-checked and carry their values."""
        self.shadow = None

    def owner(self, off: int) -> str:
        for name, start, size in self.allocs:
            if start <= off < start + size:
                return f"{name}+{off - start}" if off != start else name
        return f"{self.space}+{off:#x}"

    def nearest(self, off: int) -> str:
        """Where an out-of-bounds offset lies relative to the allocations: `` (N bytes past
        the end of NAME)`` for the closest one below it, else ``""``."""
        below = [(start + size, name) for name, start, size in self.allocs if start + size <= off]
        if not below:
            return ""
        end, name = max(below)
        return f" ({off - end} bytes past the end of {name})"

    def in_bounds(self, offs: np.ndarray, nbytes: int) -> np.ndarray:
        """Per offset: do the ``nbytes`` lie inside one allocation? Allocations are separated
        by red zones (``kverify.launch.layout.RED_ZONE``), so an overflow of one buffer or
        shared variable that would land in its neighbour lands in no allocation instead."""
        offs = np.asarray(offs, np.int64)
        if not self.allocs:
            return (offs >= 0) & (offs + nbytes <= self.size)
        if getattr(self, "_spans", (None, -1))[1] != len(self.allocs):
            order = sorted((start, start + size) for _, start, size in self.allocs)
            self._spans = (np.array(order, np.int64).reshape(-1, 2), len(self.allocs))
        spans = self._spans[0]
        if not len(spans):
            return np.zeros(offs.shape, bool)
        i = np.searchsorted(spans[:, 0], offs, side="right") - 1  # the allocation starting at or below
        j = np.maximum(i, 0)
        return (i >= 0) & (offs >= spans[j, 0]) & (offs + nbytes <= spans[j, 1])

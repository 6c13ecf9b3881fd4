"""Programmatic dependent launch (PDL, PTX ISA §9.7.13 griddepcontrol): a grid launched after its
primary grid with programmatic stream serialization may start as soon as every CTA of the primary
has executed ``griddepcontrol.launch_dependents`` or exited, so it can run alongside the primary;
``launch_dependents`` orders no memory, and only ``griddepcontrol.wait`` — "wait until all
prerequisite grids in flight have completed and all the memory operations from the prerequisite
grids are performed and made visible to the current grid" — orders a thread's accesses after the
primary's.

A pair is checked as two runs. The primary's run records its global-memory ``Footprint``: per
byte, a location that wrote it and one that read it (a write wins over an atomic, which counts as a
write). The dependent's run starts from the memory the primary left, its shared buffers rebased
onto the dependent's layout (``Footprint.rebase``), and checks every global access a lane makes
before its own ``griddepcontrol.wait`` against it (``check``): a read of bytes the primary wrote, or
a write of bytes the primary read or wrote, is ``race.global.dependent-grid``. Storage is paged
(``paged``): it follows the bytes the primary touched.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.memory_model.execution import RACE_GLOBAL_DEPENDENT_GRID

from .paged import PageTable, PagedArray


class Footprint:
    """Global-memory bytes one grid wrote and read: per byte, the index (into ``locs``, 0 =
    none) of a location that wrote it and of one that read it; ``triggers``: where the grid
    executed ``griddepcontrol.launch_dependents`` (the first location)."""

    def __init__(self, size: int):
        self.size = size
        pages = PageTable(size)
        self.write = PagedArray(pages, np.int32)
        self.read = PagedArray(pages, np.int32)
        self.locs: list = [None]
        self._index: dict = {}
        self.trigger = None

    def loc(self, loc) -> int:
        i = self._index.get(loc)
        if i is None:
            i = self._index[loc] = len(self.locs)
            self.locs.append(loc)
        return i

    def record(self, idx, loc, write: bool):
        (self.write if write else self.read)[idx] = self.loc(loc)

    def rebase(self, buffers: dict, shared: dict, layout: dict, size: int) -> "Footprint":
        """This footprint (of a launch whose buffers lie at ``buffers``: name -> (start, dtype,
        shape)) as seen by another launch of ``size`` global bytes whose parameter buffers lie at
        ``layout`` (the same form), where ``shared`` maps each of its parameters to the buffer of
        this launch it is."""
        out = Footprint(size)
        out.locs, out._index, out.trigger = self.locs, self._index, self.trigger
        for param, name in shared.items():
            if name not in buffers or param not in layout:
                continue
            s, dtype, shape = buffers[name]
            n = int(np.prod(shape)) * np.dtype(dtype).itemsize
            d = layout[param][0]
            for src, dst in ((self.write, out.write), (self.read, out.read)):
                v = np.asarray(src[s:s + n])
                nz = np.flatnonzero(v)
                if len(nz):
                    dst[d + nz] = v[nz]
        return out


def check(m, w, ins, region, idx, lane_of, kind: str):
    """Race-check the global access ``idx`` (byte offsets; ``lane_of`` their lanes) of warp ``w``
    of a dependent grid against its primary's footprint (``m.pdl_prior``), for the lanes that
    have not executed ``griddepcontrol.wait``."""
    fp = m.pdl_prior
    early = ~w.pdl_waited[lane_of]
    if not early.any():
        return
    idx, lane_of = idx[early], lane_of[early]
    wrote = np.asarray(fp.write[idx])
    hit = wrote > 0
    other, what = wrote, "write"
    if kind != "read":
        read = np.asarray(fp.read[idx])
        if not hit.any():
            hit, other, what = read > 0, read, "read"
    if not hit.any():
        return
    j = int(np.flatnonzero(hit)[0])
    byte, lane, ploc = int(idx[j]), int(lane_of[j]), fp.locs[int(other[j])]
    trig = (f"the primary executes griddepcontrol.launch_dependents at {_fmt_loc(fp.trigger)}" if fp.trigger
            else "the primary's CTAs start it by exiting")
    thread = f"thread {w.index * 32 + lane} (warp {w.index}, lane {lane}) of {w.cta.describe()}"
    m.report(RACE_GLOBAL_DEPENDENT_GRID.id,
             f"{kind} of global {region.owner(byte)} by {thread} at {_fmt_loc(ins.loc)} before its "
             f"griddepcontrol.wait, and the primary grid's {what} at {_fmt_loc(ploc)}: a programmatic dependent "
             f"grid may run alongside its primary ({trig}), and only griddepcontrol.wait orders its accesses after "
             f"the primary's (§9.7.13)", [ins.loc, ploc], address=byte, space="global", object=region.owner(byte),
             this=thread, other=f"the primary grid ({what})", iterations=[k for _, k in w.iters])

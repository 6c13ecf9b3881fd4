"""What every handler family shares: the registry helper, state-space and width lookups, an
operand's per-lane values, and the one-step generator a handler returns to yield to the
scheduler once.

A handler is ``h(machine, warp, instr, mask) -> None | generator``; a generator yields to
the scheduler (``None``: a scheduling point, a ``Wait``: blocked).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import VecOp
from kverify.semantics.ir.types import SCALAR_BITS

from ..state import U64, low_mask

SPACE_MODS = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry",
              "param::func", "const")



def registry():
    """A family's handler table and the decorator that fills it (keyed by op-table mnemonic)."""
    table: dict = {}

    def handler(*names):
        def deco(fn):
            for n in names:
                table[n] = fn
            return fn
        return deco

    return table, handler


def space_of(ins):
    for mo in ins.mods:
        if mo in SPACE_MODS:
            return mo
    return None


def bits_of(ty):
    return SCALAR_BITS[ty]



def yield_once():
    yield None


def operand_lanes(m, w, op, bits) -> list:
    """Per element of a register or vector operand (``{a, b, ...}``), its ``bits``-bit value in each
    of the warp's 32 lanes (uint64)."""
    els = op.elems if isinstance(op, VecOp) else (op,)
    return [np.broadcast_to(np.asarray(m.val(w, e, bits), U64), (32,)) & U64(low_mask(bits)) for e in els]


def replicas(mask, key) -> tuple:
    """``(mask with one lane kept per key, [lanes of every key more than one lane shares])``:
    lanes of one instruction whose operation ``key(lane)`` is identical (an ``mbarrier.init`` of
    the same barrier and count, a bulk store of the same bytes to the same place), which the
    interpreter performs once and reports as replicated."""
    groups: dict = {}
    for lane in np.flatnonzero(mask).tolist():
        groups.setdefault(key(lane), []).append(lane)
    kept = np.array(mask, bool)
    shared = [lanes for lanes in groups.values() if len(lanes) > 1]
    for lanes in shared:
        kept[lanes[1:]] = False
    return kept, shared

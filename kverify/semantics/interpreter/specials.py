"""Special registers (PTX ISA §10): their per-lane values for a warp of a launch, and which of
them depend on timing rather than on the launch.

``%envreg1``/``%envreg2`` (§10.25 ``%envreg<32>``, driver-defined) carry the high and low halves of
the grid workspace of a cooperative launch: cooperative groups' ``grid.sync()`` (CUDA's
``cooperative_groups/details/sync.h``) counts the CTAs' arrivals in a word of it with
``atom.add.release.gpu`` and spins on ``ld.acquire.gpu``, and traps when the pointer is null (a
launch that is not cooperative). The interpreter gives a cooperative launch a zeroed workspace
(``Machine.grid_workspace``) and runs its CTAs side by side.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import operand_regs
from kverify.semantics.ir.visit import reachable_instructions

from .state import LANES, U64

#: the grid workspace's allocation name and size (cooperative groups use a 32-bit word at +4)
GRID_WORKSPACE = "grid workspace (cooperative launch)"
GRID_WORKSPACE_BYTES = 16
_WORKSPACE_REGS = ("%envreg1", "%envreg2")


def reads_grid_workspace(module, kernel) -> bool:
    """Whether ``kernel`` (or a function it calls) reads the cooperative-launch workspace
    registers."""
    return any(r.name in _WORKSPACE_REGS for i in reachable_instructions(module, kernel)
               for o in i.operands for r in operand_regs(o))


def _dim(v, comp):
    return v[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)]


def _sp_tid(m, w, comp):
    return w.tid[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)].astype(U64)


SPECIALS = {
    "%tid": _sp_tid,
    "%ntid": lambda m, w, c: np.full(32, _dim(m.spec.block, c), U64),
    "%ctaid": lambda m, w, c: np.full(32, _dim(w.cta.ctaid, c), U64),
    "%nctaid": lambda m, w, c: np.full(32, _dim(m.spec.grid, c), U64),
    "%laneid": lambda m, w, c: LANES.astype(U64),
    "%warpid": lambda m, w, c: np.full(32, w.index, U64),
    "%nwarpid": lambda m, w, c: np.full(32, 64, U64),
    "%warpsize": lambda m, w, c: np.full(32, 32, U64),
    "%smid": lambda m, w, c: np.zeros(32, U64),
    "%nsmid": lambda m, w, c: np.full(32, 132, U64),
    "%gridid": lambda m, w, c: np.zeros(32, U64),
    "%lanemask_eq": lambda m, w, c: (U64(1) << LANES.astype(U64)),
    "%lanemask_lt": lambda m, w, c: (U64(1) << LANES.astype(U64)) - U64(1),
    "%lanemask_le": lambda m, w, c: ((U64(1) << (LANES.astype(U64) + U64(1))) - U64(1)) & U64(0xFFFFFFFF),
    "%lanemask_gt": lambda m, w, c: (~((U64(1) << (LANES.astype(U64) + U64(1))) - U64(1))) & U64(0xFFFFFFFF),
    "%lanemask_ge": lambda m, w, c: (~((U64(1) << LANES.astype(U64)) - U64(1))) & U64(0xFFFFFFFF),
    "%clock": lambda m, w, c: np.full(32, m.steps & 0xFFFFFFFF, U64),
    "%clock_hi": lambda m, w, c: np.zeros(32, U64),
    "%clock64": lambda m, w, c: np.full(32, m.steps, U64),
    "%globaltimer": lambda m, w, c: np.full(32, m.steps * 10, U64),
    "%cluster_ctarank": lambda m, w, c: np.full(32, w.cta.rank, U64),
    "%cluster_nctarank": lambda m, w, c: np.full(32, len(w.cta.cluster_ctas), U64),
    "%cluster_ctaid": lambda m, w, c: np.full(32, _dim(_cluster_ctaid(m, w), c), U64),
    "%cluster_nctaid": lambda m, w, c: np.full(32, _dim(m.spec.cluster, c), U64),
    "%clusterid": lambda m, w, c: np.full(32, _dim(tuple(a // b for a, b in zip(w.cta.ctaid, m.spec.cluster)), c), U64),
    "%nclusterid": lambda m, w, c: np.full(32, _dim(tuple(a // b for a, b in zip(m.spec.grid, m.spec.cluster)), c), U64),
    "%is_explicit_cluster": lambda m, w, c: np.full(32, m.spec.cluster != (1, 1, 1)),
    "%dynamic_smem_size": lambda m, w, c: np.full(32, m.spec.dynamic_smem, U64),
    "%total_smem_size": lambda m, w, c: np.full(32, m.smem_size, U64),
    "%envreg1": lambda m, w, c: np.full(32, m.grid_workspace >> 32, U64),
    "%envreg2": lambda m, w, c: np.full(32, m.grid_workspace & 0xFFFFFFFF, U64),
}


#: special registers whose value is not a function of the launch (PTX ISA §10: %warpid and
#: %smid are volatile, the clocks advance with time): a run that reads one does not stand
#: for every schedule
TIMING_SPECIALS = frozenset({"%clock", "%clock_hi", "%clock64", "%globaltimer", "%warpid", "%smid"})


def _cluster_ctaid(m, w):
    return tuple(a % b for a, b in zip(w.cta.ctaid, m.spec.cluster))


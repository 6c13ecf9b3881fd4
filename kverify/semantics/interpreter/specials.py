"""Special registers (PTX ISA §10): their per-lane values for a warp of a launch, and which of
them depend on timing rather than on the launch."""
from __future__ import annotations

import numpy as np

from .state import LANES, U64


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
}


#: special registers whose value is not a function of the launch (PTX ISA §10: %warpid and
#: %smid are volatile, the clocks advance with time): a run that reads one does not stand
#: for every schedule
TIMING_SPECIALS = frozenset({"%clock", "%clock_hi", "%clock64", "%globaltimer", "%warpid", "%smid"})


def _cluster_ctaid(m, w):
    return tuple(a % b for a, b in zip(w.cta.ctaid, m.spec.cluster))


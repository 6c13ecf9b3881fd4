"""Synchronization protocols as pure, transactional step functions.

One module per protocol, each with a frozen state, small frozen command classes and
``step(state, command) -> Outcome``:

* ``mbarrier``        — mbarrier objects (PTX ISA §9.7.13.15)
* ``named_barrier``   — CTA named barriers 0..15 (§9.7.13.1)
* ``async_groups``    — cp.async groups, bulk async groups, wgmma groups
                        (§9.7.9.25.3, §9.7.9.25.4, §9.7.15)
* ``cluster_barrier`` — barrier.cluster.arrive / wait (§9.7.13)
* ``reference``       — independent simpler models, used by the tests only

Commands of different protocols share short names (``Arrive``, ``Sync``...), so import
them through their module: ``from kverify.semantics.memory_model.protocols import mbarrier``;
``mbarrier.step(state, mbarrier.Arrive())``.
"""

from . import async_groups, cluster_barrier, mbarrier, named_barrier
from .common import Outcome, Rule, Violation

ALL_RULES = (
    mbarrier.RULES + named_barrier.RULES + async_groups.RULES + cluster_barrier.RULES
)

mbarrier_step = mbarrier.step
named_barrier_step = named_barrier.step
cp_async_step = async_groups.cp_async_step
bulk_group_step = async_groups.bulk_group_step
wgmma_step = async_groups.wgmma_step
cluster_barrier_step = cluster_barrier.step

MbarrierState = mbarrier.MbarrierState
NamedBarrierState = named_barrier.NamedBarrierState
CpAsyncState = async_groups.CpAsyncState
BulkGroupState = async_groups.BulkGroupState
WgmmaState = async_groups.WgmmaState
ClusterBarrierState = cluster_barrier.ClusterBarrierState

__all__ = [
    "Outcome", "Rule", "Violation", "ALL_RULES",
    "mbarrier", "named_barrier", "async_groups", "cluster_barrier",
    "mbarrier_step", "named_barrier_step", "cp_async_step", "bulk_group_step", "wgmma_step",
    "cluster_barrier_step",
    "MbarrierState", "NamedBarrierState", "CpAsyncState", "BulkGroupState", "WgmmaState",
    "ClusterBarrierState",
]

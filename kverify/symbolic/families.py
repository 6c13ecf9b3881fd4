"""How the symbolic engine reads the op table: which rows it executes as memory accesses,
barriers, value semantics or no-ops, and which lie outside its classic (``bar.sync``-only)
barrier-interval model. Every decision here is a column of the row
(:mod:`kverify.semantics.ir.optable`: ``effect``, ``sync``, operand slots); the only
mnemonics named are the families with a handler of their own (``HANDLERS``), as in the
interpreter.

PTX ISA (9.0): §9.7.9 data movement, §9.7.12 control flow, §9.7.13 synchronization.
"""
from __future__ import annotations

from kverify.semantics.ir.optable import MBARRIER_SYNC, OPS, space_of

#: ``sync`` effects whose ordering is the async proxy, an mbarrier or a group wait: the
#: classic barrier-interval model does not encode them (§9.7.9.25 cp.async*, §9.7.13.15
#: mbarrier, §9.7.15 wgmma, §9.7.13.4 fence.proxy)
ASYNC_ORDERING = frozenset({
    "cp.async", "cp.async.commit", "cp.async.wait", "cp.async.wait_all", "cp.async.mbarrier.arrive",
    "bulk.copy", "bulk.commit", "bulk.wait",
    "mbarrier.init", "mbarrier.inval", "mbarrier.arrive", "mbarrier.arrive_drop", "mbarrier.expect_tx",
    "mbarrier.complete_tx", "mbarrier.wait",
    "wgmma.fence", "wgmma.commit", "wgmma.wait", "wgmma.mma",
    "fence.proxy.async", "fence.proxy.tensormap",
})
#: ``sync`` effects that may order accesses but that the barrier-interval model does not
#: count: a race found while one is present is unknown, not violated (``bar.warp.sync`` with
#: a constant full mask is counted, as a barrier of the warp's lanes)
UNCOUNTED_ORDERING = {
    "fence": "a memory fence (with flag synchronization)",
    "bar.warp.sync": "__syncwarp with a partial or register mask",
    "cluster.barrier": "a cluster barrier",
}
#: ``sync`` effects with nothing to order among a CTA's generic-proxy accesses (§9.7.19
#: setmaxnreg only moves registers between the warps of a warpgroup; §9.7.13 griddepcontrol
#: orders this grid against a dependent or primary grid, not threads of one grid)
NO_ORDERING = frozenset({"griddepcontrol", "setmaxnreg", "fence.mbarrier_init", "fence.proxy.alias"})
#: ``sync`` effects of the mbarrier object (§9.7.13.15)
MBARRIER = MBARRIER_SYNC & ASYNC_ORDERING
#: families with a handler of their own in the executor (method names)
HANDLERS = {"ret": "ret", "exit": "exit", "trap": "trap", "call": "call", "elect": "elect"}
#: handlers chosen by a control row's ``flow`` column: the dispatch check that structuring
#: leaves of an indirect branch (``brx.idx index, N``)
FLOW_HANDLERS = {"branch.indirect": "dispatch"}
#: memory access mode of each dereferencing operand slot
DEREF = {"load": "read", "store": "write", "update": "update"}
#: state spaces private to a thread (or read-only): no race, no ordering
PRIVATE_SPACES = ("param", "param::entry", "param::func", "local", "const")


def row_of(ins):
    """The instruction's row, or None for an opaque (unsupported) instruction."""
    return OPS.get(ins.op) if ins.supported else None


def sync_of(ins) -> str | None:
    r = row_of(ins)
    return r.sync if r is not None else None


def operand(ins, name: str):
    """The operand in the row's slot called ``name`` (``mbar``, ``size``, ``count``, ...), or
    None when the row has no such slot or the instruction leaves it out."""
    r = row_of(ins)
    if r is None:
        return None
    i = next((i for i, s in enumerate(r.operands) if s.name == name), None)
    return ins.operands[i] if i is not None and i < len(ins.operands) else None


def is_async(ins) -> bool:
    """An asynchronous operation, or synchronization whose ordering the classic model does not
    encode (``ASYNC_ORDERING``)."""
    r = row_of(ins)
    return r is not None and (r.effect == "async" or r.sync in ASYNC_ORDERING)


def is_barrier(ins) -> bool:
    """``bar`` / ``barrier`` (§9.7.13.1), any form."""
    return sync_of(ins) == "bar"


def deref(ins):
    """``(operand index, mode)`` of the operand the instruction accesses memory through
    (mode ``read``/``write``/``update``), or None."""
    r = row_of(ins)
    if r is None:
        return None
    return next(((i, DEREF[s.access]) for i, s in enumerate(r.operands) if s.access in DEREF), None)


def is_atomic(ins) -> bool:
    """``atom`` / ``red`` (§9.7.13.5, §9.7.13.6): the rows with atomic value semantics."""
    r = row_of(ins)
    return r is not None and r.semantics == "atom"


def is_unmodelled_memory(ins) -> bool:
    """A memory effect whose per-lane addresses the engine does not model: the collective
    matrix loads/stores (ldmatrix, stmatrix) and accesses without a dereferenced address slot
    (tensormap.replace)."""
    r = row_of(ins)
    return (r is not None and r.effect == "memory" and (r.sync == "collective" or deref(ins) is None)
            and not matrix_rows(ins))


def matrix_rows(ins) -> int:
    """``ldmatrix``/``stmatrix`` ``.m8n8`` of 16-bit elements (§9.7.9.19-20): the number of lanes
    whose address operand names a row of 16 bytes (lanes ``8i .. 8i+7`` the rows of matrix ``i``:
    8, 16 or 32 for ``.x1``/``.x2``/``.x4``); 0 for any other instruction or shape."""
    r = row_of(ins)
    if r is None or r.collective != "matrix" or r.effect != "memory" or "m8n8" not in ins.mods:
        return 0
    if [t for t in ins.types() if t != "b16"]:
        return 0
    return 8 * next((n for m, n in (("x1", 1), ("x2", 2), ("x4", 4)) if m in ins.mods), 0)


def is_private_memory(ins) -> bool:
    """A memory access to a thread-private or read-only state space."""
    return space_of(ins) in PRIVATE_SPACES


def handler(ins) -> str | None:
    r = row_of(ins)
    return (HANDLERS.get(r.mnemonic) or FLOW_HANDLERS.get(r.flow)) if r is not None else None


def outside_classic_model(ins) -> bool:
    """Instructions whose ordering or memory effects put a kernel outside the classic
    barrier-interval race model (``fence.proxy.async`` alone orders nothing there)."""
    r = row_of(ins)
    if r is None:
        return False
    return (is_async(ins) and r.sync != "fence.proxy.async") or (r.effect == "memory" and deref(ins) is None)

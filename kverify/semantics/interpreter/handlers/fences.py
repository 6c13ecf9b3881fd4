"""Fences with an interpreter effect: membar/fence.sc/fence.acq_rel/fence.acquire/
fence.release (the fence halves of the release and acquire patterns, §8.8, §9.7.13.4),
fence.proxy.async (orders generic-proxy accesses of the state space it names before later
async-proxy ones, §9.7.13.4)
and fence.mbarrier_init (§9.7.13.15.3).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.optable import proxy_fence_spaces

from .common import registry, yield_once

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- fences


@handler("membar", "fence")
def h_fence(m, w, ins, mask):
    """``membar`` is ``fence.sc``; a bare ``fence`` is ``fence.acq_rel``. The acquire half
    joins the release clocks the warp's relaxed reads observed; the release half keeps the
    warp's clock for its later relaxed writes (``hb`` release patterns). The fence's scope is
    not compared with the writes' (the writes' own scopes decide moral strength)."""
    acquire = "release" not in ins.mods
    release = "acquire" not in ins.mods
    if acquire and w.acq_pending is not None:
        m.acquire(w, w.acq_pending, ins, "release patterns observed by relaxed strong reads",
                  releases=m.trace.pending_strong.pop(w.agent, None) if m.trace is not None else None)
        w.acq_pending = None
    if release:
        w.fence_rel = w.vc.copy()
        w.release_tick()


@handler("fence.proxy.async", "fence.proxy.async::generic")
def h_fence_proxy(m, w, ins, mask):
    """Orders the thread's earlier generic-proxy accesses before later async-proxy ones of the
    state spaces it covers (``optable.proxy_fence_spaces``): a ``.shared::cta`` fence leaves a
    global write unfenced. (``fence.proxy.alias`` orders accesses through aliased virtual addresses
    within the generic proxy, not the async proxy: a scheduling point, no proxy fence.)"""
    spaces = proxy_fence_spaces(ins)
    for sp in spaces:
        clk = m.fence_clks[sp]
        if len(clk) <= w.agent:
            clk = m.fence_clks[sp] = np.concatenate([clk, np.zeros(w.agent + 1 - len(clk), np.int64)])
        clk[w.agent] = w.clock()
        # every write ordered before this fence (race.async-proxy.issuer-fence)
        w.proxy_fence_vc[sp] = w.vc.copy()
    if "shared" in spaces:  # a fence covering shared memory also makes an mbarrier.init visible
        m.init_fences.setdefault(w.agent, []).append(w.clock())
    if m.trace is not None:
        m.trace.proxy_fence(w, ins)
    w.release_tick()
    return yield_once()


@handler("fence.proxy.alias")
def h_fence_proxy_alias(m, w, ins, mask):
    w.release_tick()
    return yield_once()


@handler("fence.mbarrier_init")
def h_fence_mbar_init(m, w, ins, mask):
    if len(m.mbar_fence_clk) <= w.agent:
        m.mbar_fence_clk = np.concatenate([m.mbar_fence_clk, np.zeros(w.agent + 1 - len(m.mbar_fence_clk), np.int64)])
    m.mbar_fence_clk[w.agent] = w.clock()
    m.init_fences.setdefault(w.agent, []).append(w.clock())
    w.release_tick()
    return yield_once()

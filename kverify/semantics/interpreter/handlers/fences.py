"""Fences with an interpreter effect: fence.proxy.async (orders generic-proxy accesses
before later async-proxy ones, §9.7.12.4) and fence.mbarrier_init (§9.7.13.15.3).
"""
from __future__ import annotations

import numpy as np

from .common import registry, yield_once

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- fences


@handler("fence.proxy.async", "fence.proxy.async::generic", "fence.proxy.alias")
def h_fence_proxy(m, w, ins, mask):
    if len(m.fence_clk) <= w.agent:
        m.fence_clk = np.concatenate([m.fence_clk, np.zeros(w.agent + 1 - len(m.fence_clk), np.int64)])
    m.fence_clk[w.agent] = w.clock()
    w.release_tick()
    return yield_once()


@handler("fence.mbarrier_init")
def h_fence_mbar_init(m, w, ins, mask):
    if len(m.mbar_fence_clk) <= w.agent:
        m.mbar_fence_clk = np.concatenate([m.mbar_fence_clk, np.zeros(w.agent + 1 - len(m.mbar_fence_clk), np.int64)])
    m.mbar_fence_clk[w.agent] = w.clock()
    w.release_tick()
    return yield_once()

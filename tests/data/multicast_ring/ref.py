"""numpy reference of tests/data/multicast_ring (the correct kernel and every twin that finishes):
``out[(tile*2 + rank)*32 + lane]`` is the float32 sum, in the kernel's order (k steps, then the
32 rows of each), of column ``lane`` of the tile's ``k_tiles`` 32 x 32 blocks of ``in``; both ranks
of a cluster write the same sums."""
from __future__ import annotations

import numpy as np

TILE = 32


def multicast_ring(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    k_tiles, num_tiles = int(args["k_tiles"]), int(args["num_tiles"])
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1, TILE)
    out = np.zeros((num_tiles, 2, TILE), np.float32)
    for t in range(num_tiles):
        acc = np.zeros(TILE, np.float32)
        for row in x[t * k_tiles * TILE:(t + 1) * k_tiles * TILE]:
            acc = (acc + row).astype(np.float32)
        out[t] = acc
    return {"out": out.reshape(-1)}
multicast_ring_release = multicast_ring  # the same sums (tests/data/multicast_ring/multicast_ring_release.cu)

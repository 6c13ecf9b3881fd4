"""The interpreter's instruction handlers, one module per instruction family, and the one
table (op-table mnemonic -> handler) the ``Machine`` is given. Each family module fills its
own ``HANDLERS``; this module assembles them explicitly (a mnemonic belongs to one family).
"""
from __future__ import annotations

from . import barriers, collectives, control, copies, fences, groups, matrix, mbarrier, memory, values

FAMILIES = (values, memory, control, collectives, barriers, fences, mbarrier, copies, groups, matrix)


def _assemble() -> dict:
    table: dict = {}
    for fam in FAMILIES:
        clash = table.keys() & fam.HANDLERS.keys()
        if clash:
            raise AssertionError(f"{fam.__name__} re-registers {sorted(clash)}")
        table.update(fam.HANDLERS)
    return table


HANDLERS = _assemble()

__all__ = ["HANDLERS", "FAMILIES"]

"""Re-export of the carry-flag names for importers that predate the handler families
(``handlers.values`` owns them)."""
from .handlers.values import CARRY, CARRY_IN, CARRY_OUT

__all__ = ["CARRY", "CARRY_IN", "CARRY_OUT"]

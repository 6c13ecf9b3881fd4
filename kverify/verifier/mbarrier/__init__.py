"""mbarrier protocol conformance. :mod:`kverify.verifier.mbarrier.static` proves the parity,
tx-byte and arrival-count obligations symbolically (docs/mbarrier.md)."""
from .static import check_mbarrier

__all__ = ["check_mbarrier"]

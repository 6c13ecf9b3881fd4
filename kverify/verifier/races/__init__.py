"""Race freedom by SMT (two-thread reduction) for shared and global memory: see
:mod:`kverify.verifier.races.smt` for the encoding and :mod:`kverify.symbolic` for the
symbolic execution that collects the accesses. docs/races.md describes both."""
from .smt import check_races

__all__ = ["check_races"]

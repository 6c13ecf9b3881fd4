"""The symbolic per-thread engine shared by the SMT checkers (races, static mbarrier
conformance, buffer extents): one thread's execution of a structured kernel body over z3
terms -- its accesses, barrier instances, loop summaries -- with per-thread symbols in
(A, B) pairs for two-thread reductions.

Modules: ``terms`` (z3 helpers), ``env`` (the launch, special registers, symbols),
``families`` (how the engine reads the op table), ``records`` (accesses, sync sites,
state), ``loops`` (loop summaries), ``instructions`` (instruction semantics),
``executor`` (the engine). Sits below ``kverify.verifier``; imports ``kverify.semantics``
only.
"""
from kverify.semantics.ir.errors import Unsupported

from .env import Env
from .executor import Executor
from .families import MBARRIER, is_atomic, operand, outside_classic_model, row_of, sync_of
from .loops import K_LIMIT, LoopInfo
from .records import Access, State, SyncSite
from .terms import (FALSE, TRUE, Substitution, Symbols, fit, is_false, is_true, keys, mk_and, mk_ite, mk_not,
                    mk_or, name)

__all__ = ["Access", "Env", "Executor", "FALSE", "K_LIMIT", "LoopInfo", "MBARRIER", "State",
           "Substitution", "Symbols", "SyncSite", "TRUE", "Unsupported", "fit", "is_atomic", "is_false", "is_true",
           "keys", "mk_and", "mk_ite", "mk_not", "mk_or", "name", "operand", "outside_classic_model", "row_of", "sync_of"]

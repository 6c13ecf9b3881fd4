"""Symbolic execution of one concrete launch: every thread of every CTA runs the
structured IR with concrete thread/block ids and scalar parameters and symbolic input
buffer contents; the result is, for each output element, a term over the inputs.

Execution order. CTAs run one after another (they share only global memory; for a
race-free kernel the order does not matter). Inside a CTA every thread runs until it
blocks — at a CTA/named barrier, a warp collective (``shfl``/``vote``/``elect``/
``redux``/``activemask``/``match``) or an ``mbarrier`` wait — then collectives are performed per
warp and barriers released, barrier interval by barrier interval. This is exact for
kernels free of data races (``kverify check`` establishes race freedom); every verdict
states the assumption.

Asynchronous copies (``cp.async``, ``cp.async.bulk``) are performed when issued; for a
race-free kernel nobody reads the destination before the matching wait and nobody writes
the source meanwhile, so completing early gives the same values. ``wgmma.mma_async`` is
performed once all 128 threads of the warpgroup issued it, and completes then, for the
same reason (PTX ISA §9.7.15). ``mbarrier`` objects
keep pending arrivals, the transaction count and the phase (PTX ISA §9.7.13.15); a
parity wait returns once the phase with that parity completed.

The carry flag CC.CF of ``add.cc``/``addc``... (PTX ISA §9.7.2) is per-thread state, as in
the interpreter (``kverify.semantics.interpreter.ops.CARRY``); the ``real`` model has no carry.

Memory is a map from byte address to the stored value (and the store's source line);
loads of exactly one stored value return it, other loads are assembled from bytes.
Unwritten global memory holds the input variables ``<buffer>[<index>]``; unwritten
shared/local memory a fresh variable per kernel (so reading it never proves anything).

A global access must lie inside the buffer its address is derived from (the interpreter's
``provenance`` rule), else inside the buffer it lands in; the walk places buffers far apart
(``layout.SPACING``), so an overflow lands in no buffer and stops the run instead of reading
or writing a neighbour. An ``ld.global.nc``/``ldu`` of a buffer the kernel also writes stops
the run: the non-coherent path may return stale data, which one coherent memory does not model.

Control flow and addresses must be concrete. A branch, guard or address that depends on
symbolic data stops the run with :class:`DataDependent`; an instruction outside the
supported set with :class:`Unsupported`. Both become ``unknown`` with the reas

Modules: :mod:`executor` (the walk over the structured IR, the CTA scheduling, registers
and the choice of handler per op-table row), :mod:`layout` (buffers, parameters, variables
and special registers of the launch), :mod:`memory` (byte-addressed memory and the
load/store handlers), :mod:`values` (value families), :mod:`barriers` (barriers,
mbarriers, asynchronous copies), :mod:`collectives` (warp collectives),
:mod:`tensorcore` (``wgmma``, ``mma.sync``, ``ldmatrix``/``stmatrix``), :mod:`atomics`
(``atom``/``red`` as order-independent folds, also at data-dependent addresses) and
:mod:`predication` (if-conversion of branches on input data whose bodies only compute,
load, store and perform atomics; ``int``/``bitexact``).
"""
from .executor import Budget, Executor
from .layout import Buffer

__all__ = ["Budget", "Buffer", "Executor"]

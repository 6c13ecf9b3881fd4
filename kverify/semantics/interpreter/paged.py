"""Per-byte bookkeeping arrays of a memory region, allocated in pages on first write.

The race shadow keeps tens of bytes per byte of memory, but a launch checked through a few
representative CTAs touches a small part of its buffers. A ``PagedArray`` reads and writes
like a numpy array indexed by byte offset (an integer, a slice, an integer array, optionally
followed by a column index); its storage holds only the pages of ``PAGE`` offsets written so
far, so its cost follows the bytes accessed, not the region size. A read of a page never
written sees the array's fill value (every unwritten page reads through block 0 of the
storage, which is never written). The arrays of one shadow share a ``PageTable``: a write
to any of them allocates the page in all of them, so an offset maps to one row everywhere.
A dense table stores every page from the start (a region a run touches almost whole).
"""
from __future__ import annotations

import numpy as np

SHIFT = 10
PAGE = 1 << SHIFT
MASK = PAGE - 1


class PageTable:
    """Which storage block holds each page of a region of ``n`` byte offsets (0: none yet).
    ``dense``: every page is stored from the start, at its own offset (a region the run touches
    almost whole, such as a CTA's shared memory: no translation, and no block 0)."""

    __slots__ = ("n", "table", "count", "_last", "dense")

    def __init__(self, n: int, dense: bool = False):
        self.n = n
        self.dense = dense
        pages = (max(n, 1) + MASK) >> SHIFT
        self.table = np.zeros(0 if dense else pages, np.int32)
        # blocks handed out; block 0 reads as the fill value and is never written (paged)
        self.count = pages if dense else 1
        # the last index array translated: (array, rows, every page written, count then); a
        # shadow operation indexes many arrays with one index array, never modified in place
        self._last = None

    def rows(self, idx, alloc: bool):
        """Storage rows of offsets ``idx`` (an int or an integer array, in ``[0, n)``); ``alloc``: give the
        pages not written yet a block (else they read block 0)."""
        if self.dense:
            return idx
        if isinstance(idx, (int, np.integer)):
            idx = int(idx)
            page = idx >> SHIFT
            blk = int(self.table[page])
            if alloc and not blk:
                blk = self.table[page] = self.count
                self.count += 1
            return blk * PAGE + (idx & MASK)
        last = self._last
        if last is not None and last[0] is idx and (last[2] or (not alloc and last[3] == self.count)):
            return last[1]
        key = idx
        idx = np.asarray(idx, np.int64)
        pages = idx >> SHIFT
        blk = self.table[pages]
        full = bool(blk.all())
        if alloc and not full:
            new = np.unique(pages[blk == 0])
            self.table[new] = np.arange(self.count, self.count + len(new))
            self.count += len(new)
            blk = self.table[pages]
            full = True
        rows = blk.astype(np.int64) * PAGE + (idx & MASK)
        self._last = (key, rows, full, self.count)
        return rows


def _get(store: np.ndarray, key):
    """``store[key]``; whole rows of a 2-D ``store`` by an index array through ``take``, which
    copies a row at a time (numpy's fancy indexing copies each row's elements one by one: ten
    times slower on the reader slots' 4 columns)."""
    if store.ndim == 2:
        k = key[0] if type(key) is tuple and len(key) == 1 else key
        if type(k) is np.ndarray and k.dtype.kind in "iu":
            return store.take(k, axis=0)
    return store[key]


class PagedArray:
    """A numpy array of ``pages.n`` rows (``width`` columns when given) filled with
    ``fill``, stored by written page (see the module doc)."""

    __slots__ = ("pages", "fill", "store")

    def __init__(self, pages: PageTable, dtype, fill=0, width: int | None = None):
        self.pages, self.fill = pages, fill
        self.store = np.full((pages.count * PAGE,) + (() if width is None else (width,)), fill, dtype)

    def __len__(self) -> int:
        return self.pages.n

    @property
    def shape(self) -> tuple:
        return (self.pages.n,) + self.store.shape[1:]

    @property
    def nbytes(self) -> int:
        """Bytes of storage held (the pages written so far, with growth slack)."""
        return self.store.nbytes

    def _storage(self) -> np.ndarray:
        need = self.pages.count * PAGE
        if len(self.store) < need:
            old = len(self.store)
            cap = min(max(need, 4 * old), len(self.pages.table) * PAGE + PAGE)
            # zeros: the system's zeroed pages, touched only where written; another fill is
            # written past the copied rows only
            new = (np.zeros if self.fill == 0 else np.empty)((cap,) + self.store.shape[1:], self.store.dtype)
            new[:old] = self.store
            if self.fill != 0:
                new[old:] = self.fill
            self.store = new
        return self.store

    def _key(self, key, alloc):
        if self.pages.dense:
            return key
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        if isinstance(first, slice):
            first = np.arange(*first.indices(self.pages.n))
        return (self.pages.rows(first, alloc),) + rest

    def __getitem__(self, key):
        if self.pages.dense:  # stored whole from the start: no translation, no growth
            return _get(self.store, key)
        return _get(self._storage(), self._key(key, False))

    def __setitem__(self, key, value):
        if self.pages.dense:
            self.store[key] = value
            return
        k = self._key(key, True)
        self._storage()[k] = value

    def clear(self, key):
        """Set ``key`` back to the fill value without allocating a page: a page never written
        already reads as the fill (its rows map to block 0, which holds it)."""
        self._storage()[self._key(key, False)] = self.fill

    def at(self, ufunc, key, values):
        """``ufunc.at`` on the array (unbuffered: repeated offsets all apply)."""
        k = self._key(key, True)
        ufunc.at(self._storage(), k, values)

    def widen(self, width: int):
        """Grow to ``width`` columns; the new ones hold the fill value."""
        old = self.store
        self.store = np.full((len(old), width), self.fill, old.dtype)
        self.store[:, :old.shape[1]] = old

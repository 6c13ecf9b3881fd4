"""Memory of the equivalence walk: a map from byte address to the stored value (and the
store's source line) per state space (global per launch, shared per CTA, local per
thread, param and const bytes read-only), generic addresses by window (PTX ISA 5.1 state
spaces, 6.4.1 generic addressing), loads assembled from bytes, unwritten global memory as
the input variables; and the handlers of ``ld``, ``st`` and ``cvta`` (PTX ISA 9.7.9).
"""
from __future__ import annotations

from kverify.launch.layout import CTA_MASK, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, VecOp
from kverify.semantics.ir.optable import non_coherent
from kverify.semantics.ir.types import SCALAR_BITS

from ..algebra import DataDependent, is_concrete
from ..folds import Fold


SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry",
          "param::func", "const")


def space_of(ins):
    for mo in ins.mods:
        if mo in SPACES:
            return mo
    return None


class Memory:
    """The memory part of :class:`~.executor.Executor`."""

    # ------------------------------------------------------------------ memory
    def _region(self, t, space, addr):
        """(store dict, key address, kind) for an access."""
        if space in (None, "generic"):
            if SHARED_WINDOW <= addr < SHARED_WINDOW + WINDOW_SIZE:
                return self._region(t, "shared", addr - SHARED_WINDOW)
            if LOCAL_WINDOW <= addr < LOCAL_WINDOW + WINDOW_SIZE:
                return t.local, addr - LOCAL_WINDOW, "local"
            if PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_SIZE:
                return None, addr - PARAM_WINDOW, "param"
            return self.gmem, addr, "global"
        if space == "global":
            return self.gmem, addr, "global"
        if space.startswith("shared"):
            if addr >> 24:
                raise Unsupported("distributed shared memory (shared::cluster addresses of other CTAs)")
            a = addr & CTA_MASK
            if a >= self.smem_size:
                # what the interpreter does there is not what a GPU does (an illegal address);
                # e.g. a Triton kernel launched without its metadata.shared bytes
                raise Unsupported(f"a shared-memory access at offset {a}, beyond the {self.smem_size} bytes of "
                                  f"shared memory of this launch (static variables + dynamic_smem/shared_bytes)")
            return t.cta.smem, a, "shared"
        if space == "local":
            return t.local, addr - LOCAL_WINDOW if addr >= LOCAL_WINDOW else addr, "local"
        if space.startswith("param"):
            return None, addr - PARAM_WINDOW if addr >= PARAM_WINDOW else addr, "param"
        if space == "const":
            return None, addr, "const"
        raise Unsupported(f"state space {space}")

    def global_buffer(self, a, n, ins=None, what="access"):
        """The buffer that a global access of ``n`` bytes at ``a`` by ``ins`` reads or writes,
        ``None`` for one inside a module-scope ``.global`` variable. The access must lie inside
        the buffer its address is derived from (``ptr_base``), else inside the buffer it lands
        in; one that does not stops the run, whichever buffer's bytes it would reach."""
        own = self.ptr_base.get(id(ins)) if ins is not None else None
        buf = own or self.buffer_at(a)
        if buf is None:
            gv = self.global_var_at(a)
            if gv is not None and self.global_var_at(a + n - 1) is gv:
                return None
            raise Unsupported(f"a global {what} of {n} bytes at {a:#x} is outside every buffer{self._nearest(a)}",
                              ins)
        if buf.start <= a and a + n <= buf.start + buf.nbytes:
            return buf
        if own is None:
            raise Unsupported(f"a global {what} of {n} bytes at {a:#x} runs past the end of {buf.param}", ins)
        end = own.start + own.nbytes
        where = f"{a - end} bytes past its end" if a >= end else f"{own.start - a} bytes before it" \
            if a < own.start else "across its end"
        lands = self.buffer_at(a)
        into = f"; it lands in {lands.param}" if lands is not None and lands is not own else ""
        raise Unsupported(f"a global {what} of {n} bytes at {a:#x} is outside {own.param}, the buffer its address is "
                          f"derived from ({where}{into})", ins)

    def _nearest(self, a):
        below = [b for b in self.buffers if b.start <= a]
        if not below:
            return ""
        b = max(below, key=lambda b: b.start)
        return f" ({a - b.start - b.nbytes} bytes past the end of {b.param})"

    def load(self, t, space, addr, n, ins=None):
        store, a, kind = self._region(t, space, addr)
        if kind == "global":
            buf = self.global_buffer(a, n, ins, "load")
            if buf is not None and ins is not None and non_coherent(ins):
                self.read_only_loads.setdefault(buf.name, (buf, ins))
        if kind in ("param", "const"):
            src = self.param_bytes if kind == "param" else self.const_bytes
            v = 0
            for j in range(n):
                b = src.get(a + j)
                if b is None:
                    raise Unsupported(f"{kind} load outside the known {kind} bytes", ins)
                v |= b << (8 * j)
            return v
        e = store.get(a)
        if e is not None and e[0] == n:
            if type(e[1]) is Fold:  # observed: later atomics copy it (atomics.py)
                self.observe_fold(t, e[1], kind, ins)
            return e[1]
        return self._assemble(store, a, n, kind, t)

    def _assemble(self, store, a, n, kind, t):
        pieces = []
        j = 0
        while j < n:
            b = a + j
            found = None
            for k in range(0, 16):
                e = store.get(b - k)
                if e is not None and e[0] > k:
                    found = (b - k, e)
                    break
            if found is not None:
                start, (sz, v, _loc_) = found
                lo = b - start
                take = min(sz - lo, n - j)
                pieces.append((self.alg.extract_bytes(v, lo, take, sz), take))
                j += take
                continue
            # unwritten: input variables (global) or fresh variables
            if kind == "global":
                buf = self.buffer_at(b)
                if buf is None:
                    gv = self.global_var_at(b)
                    if gv is None:
                        raise Unsupported(f"global load at {b:#x} outside every buffer")
                    if b not in self.gvar_bytes:
                        raise Unsupported(f"a load of module-scope .global variable {gv.name}, which has no "
                                          f"initializer (writable state shared across launches)")
                    self.gvars_read.add(gv.name)
                    pieces.append((self.gvar_bytes[b], 1))
                    j += 1
                    continue
                idx = (b - buf.start) // buf.esize
                es = buf.start + idx * buf.esize
                v = self.initial(buf, idx)
                lo = b - es
                take = min(buf.esize - lo, n - j)
                pieces.append((self.alg.extract_bytes(v, lo, take, buf.esize), take))
                j += take
                continue
            where = f"cta{t.cta.ctaid}" if kind == "shared" else f"t{t.linear}.cta{t.cta.ctaid}"
            v = self.alg.fresh(f"uninit.{self.tag}.{kind}.{where}.{b}", 8)
            pieces.append((v, 1))
            j += 1
        if len(pieces) == 1:
            return pieces[0][0]
        return self.alg.concat_bytes(pieces)

    def initial(self, buf, idx):
        return self.alg.input_value(f"{buf.name}[{idx}]", buf.dtype, 8 * buf.esize)

    def store(self, t, space, addr, n, value, loc, ins=None):
        store, a, kind = self._region(t, space, addr)
        if kind in ("param", "const"):
            raise Unsupported(f"store to {kind} space")
        if kind == "global" and self.global_buffer(a, n, ins, "store") is None:
            raise Unsupported(f"a store to module-scope .global variable {self.global_var_at(a).name} "
                              f"(writable global state)")
        if t is not None and t.pred is not None:
            value = self.predicated_store(t, space, addr, n, value)
        self._clear(store, a, n, kind, t)
        store[a] = (n, value, loc)

    def _clear(self, store, a, n, kind, t):
        """Remove or split stored values that overlap ``[a, a+n)``."""
        for k in range(1, 16):
            e = store.get(a - k)
            if e is not None and e[0] > k:
                sz, v, lc = e
                del store[a - k]
                for j in range(sz):
                    b = a - k + j
                    if a <= b < a + n:
                        continue
                    store[b] = (1, self.alg.extract_bytes(v, j, 1, sz), lc)
        for j in range(0, n):
            e = store.get(a + j)
            if e is None:
                continue
            sz, v, lc = e
            del store[a + j]
            if j + sz > n:
                for q in range(n - j, sz):
                    store[a + j + q] = (1, self.alg.extract_bytes(v, q, 1, sz), lc)

    def check_read_only_loads(self):
        """``ld.global.nc`` and ``ldu`` read through the non-coherent path, which PTX allows only
        for data read-only for the whole kernel (PTX ISA 9.7.9, ld.global.nc and ldu): such
        a load of a buffer the launch also writes may return stale bytes, which this walk (one
        coherent memory) does not model."""
        written = self.written_buffers()
        for name, (buf, ins) in self.read_only_loads.items():
            if name in written:
                raise Unsupported(f"{ins.opcode} reads {buf.param} through the non-coherent path, and this kernel "
                                  f"also writes {buf.param} (the path is for data read-only for the whole kernel: "
                                  f"the load may return stale values)", ins)

    def written_buffers(self) -> set:
        """Names of the buffers this launch stored to (any byte of global memory)."""
        out, spans = set(), sorted((b.start, b.start + b.nbytes, b.name) for b in self.buffers)
        for a in self.gmem:
            for lo, hi, name in spans:
                if lo <= a < hi:
                    out.add(name)
                    break
            if len(out) == len(spans):
                break
        return out

    def output_terms(self):
        """{buffer name: [(term, store loc or None) per element]} for the launch's outputs
        (all buffers when the spec names none)."""
        outs = set(self.spec.outputs)
        res = {}
        for b in self.buffers:
            if outs and b.param not in outs:
                continue
            vals = []
            for i in range(b.count):
                a = b.start + i * b.esize
                e = self.gmem.get(a)
                if e is not None and e[0] == b.esize:
                    vals.append((e[1], e[2]))
                else:
                    v = self._assemble(self.gmem, a, b.esize, "global", None)
                    loc = None
                    for k in range(b.esize):
                        for kk in range(16):
                            ee = self.gmem.get(a + k - kk)
                            if ee is not None and ee[0] > kk:
                                loc = ee[2]
                                break
                        if loc:
                            break
                    vals.append((v, loc))
            res[b.name] = vals
        return res

    # ------------------------------------------------------------------ handlers
    def h_cvta(self, t, ins):
        sp = space_of(ins)
        a = self.val(t, ins.operands[1], 64)
        if not is_concrete(a):
            raise DataDependent("cvta of input data")
        to = "to" in ins.mods
        if sp == "global" or sp is None or sp == "const":
            r = a
        elif sp.startswith("shared"):
            r = a - SHARED_WINDOW if to else a + SHARED_WINDOW
        elif sp == "local":
            r = a - LOCAL_WINDOW if to else a + LOCAL_WINDOW
        elif sp.startswith("param"):
            r = a - PARAM_WINDOW if to else (a + PARAM_WINDOW if a < PARAM_WINDOW else a)
        else:
            raise Unsupported(f"cvta for {sp}", ins)
        self.write(t, ins.operands[0], r & ((1 << 64) - 1))

    def _elem_bytes(self, ins):
        d = self._dec.get(id(ins))
        if d is None:
            tys = ins.types()
            if not tys:
                raise Unsupported(f"{ins.opcode}: no type", ins)
            d = self._dec[id(ins)] = (tys[-1], max(SCALAR_BITS[tys[-1]] // 8, 1), ins)
        return d[0], d[1]

    def h_ld(self, t, ins):
        ty, nb = self._elem_bytes(ins)
        dst, a = ins.operands[0], ins.operands[1]
        space = space_of(ins)
        slot = self.param_slot(t, a)
        base = slot[1] if slot else self.addr(t, a)
        elems = dst.elems if isinstance(dst, VecOp) else (dst,)
        for j, d in enumerate(elems):
            v = self._param_load(t, slot[0], base + j * nb, nb, ins) if slot else self.load(t, space, base + j * nb, nb,
                                                                                             ins)
            if isinstance(d, Reg) and self.reg_width(d.name) > 8 * nb and ty.startswith("s"):
                v = self.alg.fit(v, 8 * nb)
                if type(v) is int:
                    if v >> (8 * nb - 1):
                        v -= 1 << (8 * nb)
                    v &= (1 << self.reg_width(d.name)) - 1
                else:
                    v = self.alg.fit(v, self.reg_width(d.name), signed=True)
            self.write(t, d, v)
            if self.terms is not None:
                self.terms.note(ins.loc, "load", v)

    def _param_load(self, t, name, off, nb, ins):
        """``nb`` bytes at ``off`` of a call's ``.param`` storage, as one earlier store of the same
        width left them (a load across stores of other widths is not modelled)."""
        got = t.params.get(name, {}).get(off)
        if got is None or got[0] != nb:
            raise Unsupported(f"{ins.opcode}: a read of {name}+{off} ({nb} bytes) that no store of that width to "
                              f"the .param variable wrote", ins)
        return got[1]

    def h_st(self, t, ins):
        ty, nb = self._elem_bytes(ins)
        a, src = ins.operands[0], ins.operands[1]
        space = space_of(ins)
        slot = self.param_slot(t, a)
        base = slot[1] if slot else self.addr(t, a)
        elems = src.elems if isinstance(src, VecOp) else (src,)
        for j, s in enumerate(elems):
            v = self.val(t, s, 8 * nb)
            if slot:
                t.params.setdefault(slot[0], {})[base + j * nb] = (nb, v)
                continue
            self.store(t, space, base + j * nb, nb, v, ins.loc, ins)
            if self.terms is not None:
                self.terms.note(ins.loc, "store", v)

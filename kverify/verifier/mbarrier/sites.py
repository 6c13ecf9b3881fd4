"""mbarrier sync sites of one symbolic thread: an extension of the race checker's
symbolic executor (:mod:`kverify.symbolic`) that records every mbarrier instruction
and every copy that signals an mbarrier, and proposes closed forms for loop-carried
registers that are not induction variables (ring-buffer stage counters and phase bits).

Owns: what one thread does to mbarriers -- init, arrive (incl. ``.expect_tx``), expect_tx,
arrive_drop, test_wait/try_wait ``.parity`` (incl. the recognized ``blocking`` retry loop),
``cp.async.bulk[.tensor] ... .mbarrier::complete_tx::bytes`` -- each with the barrier's
shared address, count / tx / parity / byte terms, path condition and loop counters.

PTX ISA (9.x): §9.7.13.15 mbarrier (``-init``, ``-arrive``, ``-expect-tx``,
``-arrive-drop``, ``-test-wait-try-wait``), §9.7.9.25.4.1 cp.async.bulk,
§9.7.9.27 cp.async.bulk.tensor (complete-tx of the bytes copied).
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from kverify.launch import dtypes, lookup
from kverify.semantics.ir.nodes import Addr, Imm, Instr, Reg, Sym
from kverify.semantics.ir.optable import space_of
from kverify.semantics.values import FAMILIES, is_float
from kverify.symbolic import MBARRIER, TRUE, Executor, State, fit, mk_and, mk_ite, name, operand, row_of, sync_of

SAMPLES = 140  # iterations simulated to guess a closed form
MAX_PERIOD = 64
MAPA = "mapa.shared::cluster"  # the uninterpreted window-address function (``MbarExecutor._mapa``)

@dataclass
class MbarSite:
    kind: str  # init | arrive | expect_tx | wait | copy | inval | other
    instr: Instr
    addr: object  # BV32 shared address of the barrier, or None
    pc: object
    loops: tuple  # ((LoopInfo, k), ...)
    count: object = None  # init count / arrive count (BV32)
    tx: object = None  # expected tx bytes (BV32) of arrive.expect_tx / expect_tx
    parity: object = None  # BV32 parity operand of a wait
    size: object = None  # bytes of a copy (BV32) or None
    size_reason: str = ""
    drop: bool = False
    note: str = ""
    uses: object = None  # wait: BV64 count of this thread's earlier executions of this wait instruction
    counts: dict = None  # wait: ghost register -> BV64 count of this thread's executions of that wait before this one
    mask: object = None  # multicast copy: BV32 ctaMask (bit r: the CTA of cluster rank r receives the data and signal)
    rank: object = None  # remote arrive: BV32 cluster rank of the CTA whose barrier (at ``addr``) it arrives on
    seq: int = -1  # position in program order (``Executor.seq_of``: a called function's, per call)


class MbarExecutor(Executor):
    """The race checker's executor, recording mbarrier sync sites (see module docstring)."""

    def __init__(self, env, check, launch=None):
        super().__init__(env, check)
        self.launch = launch
        self.maps_used = False  # a copy's size came from a tensor map of the launch (the proofs rest on it)
        self.sites: list = []
        self.loop_syms: dict = {}  # id(LoopInfo) -> names of symbols created inside its body
        self._defs = None
        # a ghost register per wait instruction counts the thread's executions of it; loops
        # carry it like any register (havocked at their heads), so an invariant can relate
        # a wait's barrier and parity to the number of its earlier executions
        from kverify.semantics.ir.visit import reachable_instructions

        # (a wait in a called function has one too; its count starts unknown in each call: the
        # ghost is a register of the function's frame)
        waits = [i for i in reachable_instructions(env.module, self.kernel) if sync_of(i) == "mbarrier.wait"]
        self.ghosts = {id(i): f"%mbar_uses{n}" for n, i in enumerate(waits)}
        for g in self.ghosts.values():
            self.widths[g] = 64

    def initial_regs(self) -> dict:
        return {g: (z3.BitVecVal(0, 64), None) for g in self.ghosts.values()}

    def plain_instr(self, ins, st, guard):
        if row_of(ins).semantics == "mapa" and self._mapa(ins, st, guard):
            return st
        return super().plain_instr(ins, st, guard)

    def _mapa(self, ins, st, guard) -> bool:
        """``mapa.shared::cluster d, a, rank`` (§9.7.9.17): the address of ``a`` in the shared
        memory of the cluster's CTA ``rank``, one function ``MAPA`` of the two, the same in every
        cluster (a window address names a rank and an offset, not a cluster): a remote arrive on
        it names the barrier at ``a``'s offset in CTA ``rank`` (``_remote``)."""
        ops = ins.operands
        if len(ops) < 3 or not isinstance(ops[0], Reg):
            return False
        a, rank = self.read(st, ops[1], 64)[0], self.read(st, ops[2], 64)[0]
        if a is None or rank is None or z3.is_bool(a) or z3.is_bool(rank):
            return False
        v = self.env.uf(MAPA, 2)(a, rank)
        self.write(st, ops[0].name, (fit(v, self.widths.get(ops[0].name, 32)), None), guard)
        return True

    def _remote(self, st, op):
        """``(offset, rank)`` (BV32 terms) of a ``.shared::cluster`` barrier operand whose address
        ``mapa`` made, or None."""
        if not isinstance(op, Addr) or op.base is None:
            return None
        t, _ = self.read(st, op.base, None)
        if t is None or z3.is_bool(t):
            return None
        t = z3.simplify(fit(t, 32) + op.offset)
        off = 0
        if z3.is_add(t) and t.num_args() == 2 and z3.is_bv_value(t.arg(0)):
            off, t = t.arg(0).as_long(), t.arg(1)
        while z3.is_app_of(t, z3.Z3_OP_EXTRACT) or z3.is_app_of(t, z3.Z3_OP_ZERO_EXT):
            t = t.arg(0)
        if not (z3.is_app(t) and t.decl().name() == MAPA and t.num_args() == 2):
            return None
        a, r = (z3.simplify(fit(x, 32)) for x in t.children())
        return z3.simplify(a + off), r

    def dests(self, instr: Instr):
        out = Executor.dests(instr)
        g = self.ghosts.get(id(instr))
        return out + [g] if g is not None else out

    # ------------------------------------------------------------------ loops
    def _loop_attempt(self, lp, st, ivs, mode, written, region_unknown):
        mark = len(self.env.pairs)
        smark = len(self.sites)
        res = super()._loop_attempt(lp, st, ivs, mode, written, region_unknown)
        if res[0] != "ok":
            del self.sites[smark:]  # the attempt is undone
        else:
            info = res[1]
            names = set()
            for a, b in self.env.pairs[mark:]:
                if not a.eq(info.k):
                    names.add(name(a))
                    names.add(name(b))
            self.loop_syms[id(info)] = names
        return res

    def loop_closed_forms(self, lp, st, written, ivs) -> dict:
        """Guess eventually periodic closed forms by simulating the loop body's
        straight-line integer instructions from concrete entry values; the executor
        validates each guess by induction."""
        from kverify.semantics.ir.nodes import Continue, If

        body = []
        nested_writes = set()
        from kverify.semantics.ir.visit import walk

        for s in lp.body:
            if isinstance(s, Instr):
                body.append(s)
            elif isinstance(s, If) and not s.orelse and len(s.then) == 1 and isinstance(s.then[0], Continue):
                continue
            else:
                for x, _ in walk([s]):
                    if isinstance(x, Instr):
                        nested_writes.update(self.dests(x))
        known = {}
        for r, (t, _) in st.regs.items():
            if t is not None and (z3.is_bv_value(t) or z3.is_true(t) or z3.is_false(t)):
                known[r] = t
        ghosts = set(self.ghosts.values())
        cands = [r for r in sorted(written) if r not in ivs and r in known and r not in nested_writes
                 and r not in ghosts
                 and not z3.is_bool(known[r])]
        if not cands:
            return {}
        # backward slice of the candidates inside the body
        from kverify.semantics.ir.nodes import operand_regs

        need = set(cands)
        while True:
            grow = set(need)
            for ins in body:
                if set(self.dests(ins)) & need:
                    for o in ins.operands[1:]:
                        grow.update(r.name for r in operand_regs(o))
                    if ins.guard is not None:
                        grow.add(ins.guard.reg.name)
            if grow == need:
                break
            need = grow
        body = [i for i in body if set(self.dests(i)) & need]
        seqs = {r: [] for r in cands}
        cur = dict(known)
        for _ in range(SAMPLES):
            for r in list(seqs):
                if r in cur:
                    seqs[r].append(cur[r].as_long())
                else:
                    del seqs[r]
            if not seqs:
                return {}
            for ins in body:
                ds = self.dests(ins)
                if not ds:
                    continue
                v = self._eval_concrete(ins, cur)
                for d in ds:
                    cur.pop(d, None)
                if v is not None and len(ds) == 1:
                    cur[ds[0]] = v
        forms = {}
        for r, seq in seqs.items():
            w = known[r].size()
            f = _fit_periodic(seq, w)
            if f is not None:
                forms[r] = f
        return forms

    def _eval_concrete(self, ins: Instr, cur: dict):
        row = row_of(ins)
        if ins.guard is not None or row is None or row.semantics not in FAMILIES:
            return None
        types = ins.types()
        if not types or any(is_float(t) for t in types):
            return None
        for o in ins.operands[1:]:
            if isinstance(o, Reg):
                if o.name not in cur:
                    return None
            elif not isinstance(o, Imm):
                return None
        d = ins.operands[0] if ins.operands else None
        if not isinstance(d, Reg):
            return None
        st = State(TRUE, {k: (v, None) for k, v in cur.items()}, z3.BitVecVal(0, 64), z3.BoolVal(False))
        npairs = len(self.env.pairs)
        try:
            self.alu(ins, st, TRUE)
        except Exception:  # noqa: BLE001 - a form the semantics does not take
            return None
        if len(self.env.pairs) != npairs:  # something became approximate: undo, give up
            del self.env.pairs[npairs:]
            return None
        v = st.regs.get(d.name)
        if v is None:
            return None
        t = z3.simplify(v[0])
        return t if (z3.is_bv_value(t) or z3.is_true(t) or z3.is_false(t)) else None

    # ------------------------------------------------------------------ sites
    def _mbar_addr(self, st, op):
        if not isinstance(op, Addr):
            return None, "barrier operand is not an address"
        if op.base is None:
            return z3.BitVecVal(op.offset, 32), ""
        t, region = self.read(st, op.base, None)
        if t is None or z3.is_bool(t):
            return None, "barrier address not understood"
        if region not in ("shared",) and isinstance(op.base, Reg):
            # shared-window addresses computed as plain integers (cvta results truncated)
            pass
        return z3.simplify(fit(t, 32) + op.offset), ""

    def _val32(self, st, op):
        if op is None:
            return None
        t, _ = self.read(st, op, 32)
        if t is None or z3.is_bool(t):
            return None
        return z3.simplify(fit(t, 32))

    def async_instr(self, ins: Instr, st: State, guard) -> State:
        sync, mods = sync_of(ins), set(ins.mods)
        pc = mk_and(st.pc, guard)
        loops = tuple(self.loop_stack)
        site = None
        if sync == "mbarrier.init":
            a, _ = self._mbar_addr(st, operand(ins, "a"))
            site = MbarSite("init", ins, a, pc, loops, count=self._val32(st, operand(ins, "count")))
        elif sync in ("mbarrier.arrive", "mbarrier.arrive_drop"):
            a, _ = self._mbar_addr(st, operand(ins, "a"))
            tx = cnt = None
            if "expect_tx" in mods:  # arrive.expect_tx [a], txCount: one arrival
                tx = self._val32(st, operand(ins, "count"))
                cnt = z3.BitVecVal(1, 32)
            else:
                c = operand(ins, "count")
                cnt = self._val32(st, c) if c is not None else z3.BitVecVal(1, 32)
            site = MbarSite("arrive", ins, a, pc, loops, count=cnt, tx=tx, drop=sync == "mbarrier.arrive_drop")
            if "shared::cluster" in mods:
                remote = self._remote(st, operand(ins, "a")) if tx is None else None
                if remote is None:
                    site.note = "remote (.shared::cluster) arrive"
                else:
                    site.addr, site.rank = remote
        elif sync == "mbarrier.expect_tx":
            a, _ = self._mbar_addr(st, operand(ins, "a"))
            site = MbarSite("expect_tx", ins, a, pc, loops, tx=self._val32(st, operand(ins, "tx")))
        elif sync == "mbarrier.wait":
            a, _ = self._mbar_addr(st, operand(ins, "a"))
            par = self._val32(st, operand(ins, "state")) if "parity" in mods else None
            site = MbarSite("wait", ins, a, pc, loops, parity=par)
            site.counts = {x: st.regs[x][0] for x in self.ghosts.values()
                           if x in st.regs and st.regs[x][0] is not None and not z3.is_bool(st.regs[x][0])}
            site.uses = site.counts.get(self.ghosts.get(id(ins)))
            if "parity" not in mods:
                site.note = "state-operand wait"
        elif "mbarrier::complete_tx::bytes" in mods:
            a, _ = self._mbar_addr(st, operand(ins, "mbar"))
            size, why = None, ""
            if sync != "bulk.copy":
                why = f"{ins.opcode}: the complete-tx bytes of this asynchronous store are not modelled"
            elif operand(ins, "size") is not None:
                size = self._val32(st, operand(ins, "size"))
            else:
                size, why = self._tensor_bytes(ins)
            site = MbarSite("copy", ins, a, pc, loops, size=size, size_reason=why)
            if any(m.startswith("multicast") for m in mods):
                # §9.7.9.27: the data and the complete-tx go to the same shared offsets (barrier
                # included) of every CTA whose rank is set in ctaMask (16 bits)
                # (an .im2col copy has its offsets vector first: [dst], [tmap, {c}], [mbar], {offs}, ctaMask)
                mop = operand(ins, "ctaMask")
                if "im2col" in mods:
                    mop = ins.operands[4] if len(ins.operands) > 4 else None
                site.mask = self._val32(st, mop)
                if site.mask is not None:
                    site.mask = site.mask & 0xFFFF
                elif site.size is not None:
                    site.size, site.size_reason = None, "the multicast ctaMask is not understood"

        elif sync == "mbarrier.complete_tx":
            # §9.7.13.15.12 mbarrier.complete_tx: the executing thread completes txCount bytes on
            # the barrier's current phase, as an asynchronous copy's complete-tx does
            a, _ = self._mbar_addr(st, operand(ins, "a"))
            size = self._val32(st, operand(ins, "tx"))
            site = MbarSite("copy", ins, a, pc, loops, size=size,
                            size_reason="" if size is not None else "the complete_tx byte count is not understood")
            if "shared::cluster" in mods:
                site.size, site.size_reason = None, "remote (.shared::cluster) complete_tx (not modelled)"
        elif sync == "mbarrier.inval":
            site = MbarSite("inval", ins, None, pc, loops)
        elif sync in MBARRIER or sync == "cp.async.mbarrier.arrive":
            site = MbarSite("other", ins, None, pc, loops)
        if site is not None:
            site.seq = self.seq_of(ins)
            self.sites.append(site)
        self.note_operand_addresses(ins, st)
        self.havoc_dests(st, ins, guard, ins.op)
        if site is not None and site.uses is not None:
            g = self.ghosts[id(ins)]
            st.regs[g] = (mk_ite(guard, site.uses + 1, site.uses), None)
        return st

    # ------------------------------------------------------------------ tensor maps
    def tensor_map(self, ins: Instr):
        """``(tensor map, "")`` of the launch spec that a tensor copy's ``[tmap, {...}]`` operand
        names (a tensor-map parameter, or a tensor map inside a by-value struct), or ``(None,
        why not)``."""
        if self.launch is None or not (getattr(self.launch, "tensormaps", None) or any(
                isinstance(a, dict) and "struct" in a for a in (getattr(self.launch, "args", None) or {}).values())):
            return None, "the copy size comes from a tensor map and no launch spec gives tensor maps"
        if any(m in ins.mods for m in ("im2col::w", "im2col::w::128", "im2col_no_offs", "tile::gather4")):
            return None, f"{ins.opcode}: only tile and im2col mode copies are modelled"
        src = _tensor_operand(ins)
        if not isinstance(src, Addr):
            return None, "tensor map operand not understood"
        pname, poff = self._param_of(src.base, with_offset=True)
        if pname is None:
            return None, "the tensor map operand does not trace back to a kernel parameter"
        idx = next((i for i, p in enumerate(self.kernel.params) if p.name == pname), None)
        tm = lookup(self.launch.tensormaps, self.kernel, idx) if idx is not None else None
        if tm is not None and (poff not in (0, None) or src.offset):
            return None, f"the tensor map operand points {poff} bytes into tensor-map parameter {pname}"
        arg = lookup(self.launch.args, self.kernel, idx) if idx is not None and tm is None else None
        if isinstance(arg, dict) and isinstance(arg.get("struct"), dict):
            if poff is None:
                return None, f"the tensor map's offset in the by-value struct {pname} is not a constant"
            f = arg["struct"].get(str(poff + src.offset)) or {}
            tm = f.get("tensormap")
            if tm is None:
                return None, f"the launch spec gives no tensor map at offset {poff + src.offset} of struct {pname}"
        if tm is None:
            return None, f"the launch spec gives no tensor map for parameter {pname}"
        self.maps_used = True
        return tm, ""

    def _tensor_bytes(self, ins: Instr):
        tm, why = self.tensor_map(ins)
        if tm is None:
            return None, why
        pname = self._param_of(_tensor_operand(ins).base)
        im2col = "im2col" in ins.mods
        dt = dtypes.lookup(tm.get("dtype"))
        if im2col != (tm.get("mode") == "im2col"):
            return None, (f"{ins.opcode}: a {'.im2col' if im2col else 'tile-mode'} copy through the "
                          f"{tm.get('mode', 'tile')}-mode tensor map {pname}")
        if im2col:
            # §9.7.9.27 / §5.5.4: an im2col load delivers pixelsPerColumn x channelsPerPixel elements
            ppc, cpp = tm.get("pixels_per_column"), tm.get("channels_per_pixel")
            if not isinstance(ppc, int) or not isinstance(cpp, int) or dt is None:
                return None, f"tensor map {pname}: pixels_per_column, channels_per_pixel or dtype missing"
            return z3.BitVecVal(ppc * cpp * dt.itemsize, 32), ""
        box = tm.get("box")
        if not box or dt is None:
            return None, f"tensor map {pname}: box or dtype missing"
        n = dt.itemsize
        for b in box:
            n *= int(b)
        return z3.BitVecVal(n, 32), ""

    def _param_of(self, op, with_offset=False):
        """The kernel parameter a register holds the address of (through mov / cvta /
        ld.param of a unique definition); with ``with_offset``, ``(name, byte offset into
        it)``, the offset from ``add`` of constants (``None`` when it is not one)."""
        name, off = self._param_and_offset(op)
        if with_offset:
            return name, off
        return name

    def _param_and_offset(self, op):
        off = 0
        if self.frames:  # a called function's registers: not the kernel's definitions
            return None, None
        if isinstance(op, Sym):
            return (op.name, op.offset) if any(p.name == op.name for p in self.kernel.params) else (None, None)
        if self._defs is None:
            from kverify.semantics.ir.visit import instructions

            self._defs = {}
            for i in instructions(self.kernel.body):
                for d in self.dests(i):
                    self._defs.setdefault(d, []).append(i)
        seen = set()
        while isinstance(op, Reg) and op.name not in seen:
            seen.add(op.name)
            defs = self._defs.get(op.name, [])
            if len(defs) != 1:
                return None, None
            i = defs[0]
            row = row_of(i)
            if row is not None and row.semantics in ("mov", "cvta") and len(i.operands) > 1:
                op = i.operands[1]
            elif row is not None and row.semantics == "add" and len(i.operands) == 3 and off is not None \
                    and isinstance(i.operands[2], Imm):
                op, off = i.operands[1], off + i.operands[2].value
            elif row is not None and row.effect == "memory" and space_of(i) == "param" \
                    and isinstance(i.operands[1], Addr):
                op, off = i.operands[1].base, None  # the address held in the parameter, not into it
            else:
                return None, None
            if isinstance(op, Sym):
                if not any(p.name == op.name for p in self.kernel.params):
                    return None, None
                return op.name, (off + op.offset if off is not None else None)
        return None, None


def _tensor_operand(ins):
    """The tensor operand ``[tmap, {coords}]`` of a tensor copy: the source of a load, the
    destination of a store."""
    return next((o for o in ins.operands if isinstance(o, Addr) and o.coords), ins.operands[1])


def _fit_periodic(seq, w):
    """``f(k)`` (BV64 k -> BVw) reproducing ``seq`` as an eventually periodic sequence
    (prefix of at most 2 values, period at most MAX_PERIOD), or None."""
    n = len(seq)
    for s in range(0, 3):
        for p in range(1, MAX_PERIOD + 1):
            if s + 2 * p > n:
                break
            if all(seq[i] == seq[i + p] for i in range(s, n - p)):
                pre, table = seq[:s], seq[s:s + p]

                def f(k, pre=tuple(pre), table=tuple(table), s=s, p=p):
                    if p == 1:
                        body = z3.BitVecVal(table[0], w)
                    else:
                        idx = z3.URem(k - s, z3.BitVecVal(p, 64)) if s else z3.URem(k, z3.BitVecVal(p, 64))
                        body = z3.BitVecVal(table[-1], w)
                        for j in range(p - 2, -1, -1):
                            body = z3.If(idx == j, z3.BitVecVal(table[j], w), body)
                    for j in range(len(pre) - 1, -1, -1):
                        body = z3.If(k == j, z3.BitVecVal(pre[j], w), body)
                    return body
                return f
    return None

"""Random PTX programs for semantics conformance (interpreter vs GPU, bit for bit).

``programs()`` is a hypothesis strategy of ``Program``: one kernel ``conf`` over a grid of
CTAs, each thread loading its own slice of typed registers from ``in``, running a random
straight-line body with forward branches, and storing every register to ``out``. The body
draws from instruction templates covering:

* integer arithmetic (add/sub/mul/mad incl. .hi/.wide/.sat, mul24/mad24, div/rem, min/max,
  abs/neg), logic and shifts (and/or/xor/not/cnot, shl/shr, shf, lop3, prmt, bfe/bfi, dp4a/dp2a,
  popc/clz/brev), comparisons (setp with every comparison and bool op, set, selp, slct);
* floating point in f32 and f64 with every IEEE rounding mode of the op table (.rn .rz
  .rm .rp) and .ftz/.sat: add/sub/mul/fma/div/sqrt/rcp, min/max (.NaN), abs/neg, copysign,
  testp; f16/f16x2/bf16/bf16x2 arithmetic (.rn);
* conversions: int<->int (.sat), int<->float (rounding .rn/.rz/.rm/.rp and .rni/.rzi/
  .rmi/.rpi), f32<->f64/f16/bf16 (rounding, .relu, .satfinite, packed x2), float rounding
  to integral values, ``cvt.rna.tf32.f32``;
* extended precision: carry chains through CC.CF (add.cc/sub.cc/mad.cc, then addc/subc/
  madc with and without .cc; 32/64-bit; add and mad mixed; other instructions between links);
* warp collectives: shfl.sync (up/down/bfly/idx, lane and clamp/segment operands from
  registers and immediates), vote.sync (all/any/uni/ballot), redux.sync, activemask,
  elect.sync, match.sync (.any/.all, b32/b64, on values lanes share; partial membermasks
  inside a branch taken by exactly the member lanes);
* predication (guards on any non-collective instruction except ``testp`` and
  ``set.*.f32.*``, which ptxas 13.0 miscompiles under a guard, see ``guardable``; negated
  guards; forward branches over a few instructions);
* CTA barriers and shared memory: each thread writes a slot, ``bar.sync``, reads another
  thread's slot; ``red.shared`` reductions into a common word read back after a barrier.

Approximate instructions (``ex2.approx``, ``div.approx``...) are not generated: their
results are specified only up to an error bound, so bit-for-bit comparison does not apply.
Where the PTX ISA leaves a result open or ptxas demonstrably miscompiles (docs/validation.md
has the evidence), the generator steers clear: f64 operations and f32 min/max with several
NaN operands, ``abs``/``neg`` of a NaN (operands made numbers first), 64-bit
``bfe``/``bfi`` positions outside 0..255, ``setp p|p``, guarded ``testp`` and
``set.*.f32.*``, a ``shfl.sync`` predicate destination with only immediate operands,
half-precision min/max of two NaNs, and a 64-bit shift whose amount register an f32
instruction wrote (the amount goes through ``and.b32`` first), ``bfe.s32`` with a constant
position >= 32 and length (ptxas folds it to -1, also through a register holding the
constant), and a carry chain mixing additions and subtractions (ptxas keeps CC.CF as
the hardware carry, NOT borrow after a subtraction; the ISA's pseudocode says borrow).

Inputs mix special bit patterns (signed zeros, infinities, NaNs, subnormals, extremes,
integers near rounding boundaries) with random bits, from a seed drawn with the program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

NR, NRD, NH, NP = 12, 6, 6, 6  # data registers: b32, b64, b16, pred
IN_BYTES = 4 * NR + 8 * NRD + 2 * NH + 4  # padded to a multiple of 8
IN_BYTES = (IN_BYTES + 7) // 8 * 8
OUT_BYTES = IN_BYTES + 4 * NP
OUT_BYTES = (OUT_BYTES + 7) // 8 * 8
SLOTS = 6  # shared-memory exchange slots per thread
COMMON = 8  # shared words for red.shared

RND = ("rn", "rz", "rm", "rp")
IRND = ("rni", "rzi", "rmi", "rpi")
ICMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FCMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
INT_T = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64")


@dataclass(frozen=True)
class Program:
    ptx: str
    grid: int
    block: int
    input_seed: int
    templates: tuple  # names of the templates used

    def inputs(self) -> np.ndarray:
        return make_inputs(self.input_seed, self.grid * self.block)

    def launch(self) -> dict:
        n = self.grid * self.block
        return {"kernel": "conf", "grid": [self.grid, 1, 1], "block": [self.block, 1, 1],
                "buffers": {"conf_param_0": {"dtype": "uint8", "shape": [n * IN_BYTES]},
                            "conf_param_1": {"dtype": "uint8", "shape": [n * OUT_BYTES]}},
                "outputs": ["conf_param_1"]}


# --------------------------------------------------------------------------- inputs

_F32_SPECIAL = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
                0xFFC00001, 0x7FA00000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                0x3F000000, 0x4B800000, 0x4B7FFFFF, 0xCB000001, 0x3EFFFFFF, 0x3FC00000, 0x40490FDB,
                0x4F000000, 0xCF000000, 0x5F800000, 0xDF000000, 0x0000FFFF, 0x7FFFFFFF, 0xFFFFFFFF,
                0x00000002, 0x0000001F, 0x00000020, 0x00000021]
_F64_SPECIAL = [0x0, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x7FF0000000000000,
                0xFFF0000000000000, 0x7FF8000000000000, 0x7FF4000000000000, 0x0000000000000001,
                0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FE0000000000000,
                0x4330000000000000, 0x433FFFFFFFFFFFFF, 0x41DFFFFFFFC00000, 0xC1E0000000000000,
                0x47EFFFFFE0000000, 0x36A0000000000000, 0x3FF0000010000000, 0x3FF0000020000001,
                0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x0000000000000040]
_F16_SPECIAL = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x0001, 0x03FF, 0x0400,
                0x7BFF, 0xFBFF, 0x3800, 0x6800, 0x67FF, 0x3F80, 0x7F80, 0x7FC0, 0x0080, 0xFFFF, 0x00FF]


def _mix32(rng, n):
    kind = rng.integers(0, 5, n)
    special = np.array(_F32_SPECIAL, np.uint64)[rng.integers(0, len(_F32_SPECIAL), n)]
    rand = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    nice = rng.uniform(-300, 300, n).astype(np.float32).view(np.uint32).astype(np.uint64)
    small = rng.integers(-40, 40, n).astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    near = (special + rng.integers(-2, 3, n).astype(np.int64).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    return np.choose(kind, [special, rand, nice, small, near]).astype(np.uint32)


def _mix64(rng, n):
    kind = rng.integers(0, 5, n)
    special = np.array(_F64_SPECIAL, np.uint64)[rng.integers(0, len(_F64_SPECIAL), n)]
    rand = rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
    nice = rng.uniform(-1e6, 1e6, n).view(np.uint64)
    small = rng.integers(-70, 70, n).astype(np.int64).view(np.uint64)
    near = special + rng.integers(-2, 3, n).astype(np.int64).view(np.uint64)
    return np.choose(kind, [special, rand, nice, small, near]).astype(np.uint64)


def _mix16(rng, n):
    kind = rng.integers(0, 3, n)
    special = np.array(_F16_SPECIAL, np.uint32)[rng.integers(0, len(_F16_SPECIAL), n)]
    rand = rng.integers(0, 1 << 16, n).astype(np.uint32)
    nice = rng.uniform(-30, 30, n).astype(np.float16).view(np.uint16).astype(np.uint32)
    return np.choose(kind, [special, rand, nice]).astype(np.uint16)


def make_inputs(seed: int, threads: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    buf = np.zeros((threads, IN_BYTES), np.uint8)
    buf[:, :4 * NR] = _mix32(rng, threads * NR).reshape(threads, NR).view(np.uint8)
    buf[:, 4 * NR:4 * NR + 8 * NRD] = _mix64(rng, threads * NRD).reshape(threads, NRD).view(np.uint8)
    o = 4 * NR + 8 * NRD
    buf[:, o:o + 2 * NH] = _mix16(rng, threads * NH).reshape(threads, NH).view(np.uint8)
    return buf.reshape(-1)


# --------------------------------------------------------------------------- templates


def r32(i):
    return f"%r{i}"


def r64(i):
    return f"%rd{i}"


def r16(i):
    return f"%h{i}"


def pr(i):
    return f"%p{i}"


class Gen:
    """Draws one instruction (or a few) at a time; ``d`` is hypothesis's ``draw``."""

    def __init__(self, d):
        self.d = d
        self.used = []
        self.slot = 0
        self.label = 0
        self.prep = []  # unguarded lines the next instruction needs first (operand sanitizing)

    def take_prep(self) -> list:
        out, self.prep = self.prep, []
        return out

    def not_nan32(self, reg: str) -> str:
        """``reg`` with a NaN replaced by an infinity, in the scratch register ``%s0``."""
        inf = self.pick(["0f7F800000", "0fFF800000"])
        self.prep += [f"setp.nan.f32 %pn0, {reg}, {reg};", f"selp.b32 %s0, {inf}, {reg}, %pn0;"]
        return "%s0"

    def not_nan64(self, reg: str) -> str:
        inf = self.pick(["0d7FF0000000000000", "0dFFF0000000000000"])
        self.prep += [f"setp.nan.f64 %pn0, {reg}, {reg};", f"selp.b64 %sd0, {inf}, {reg}, %pn0;"]
        return "%sd0"

    def not_nan_half(self, t: str, reg: str) -> str:
        """The same for f16/bf16 (``%sh0``) and each half of f16x2/bf16x2 (``%s0``)."""
        e = t[:-2] if t.endswith("x2") else t
        inf = {"f16": "0x7C00", "bf16": "0x7F80"}[e]
        if e == t:
            self.prep += [f"setp.nan.{e} %pn0, {reg}, {reg};", f"selp.b16 %sh0, {inf}, {reg}, %pn0;"]
            return "%sh0"
        self.prep.append(f"mov.b32 {{%sh0, %sh1}}, {reg};")
        for h in ("%sh0", "%sh1"):
            self.prep += [f"setp.nan.{e} %pn0, {h}, {h};", f"selp.b16 {h}, {inf}, {h}, %pn0;"]
        self.prep.append("mov.b32 %s0, {%sh0, %sh1};")
        return "%s0"

    def i(self, n):
        return self.d(st.integers(0, n - 1))

    def pick(self, xs):
        return self.d(st.sampled_from(xs))

    def flag(self, p=0.3):
        return self.d(st.integers(0, 99)) < int(p * 100)

    def src32(self):
        if self.flag(0.15):
            return self.pick(["0", "1", "-1", "31", "0x7FFFFFFF", "0x80000000", "3", "255"])
        return r32(self.i(NR))

    def src64(self):
        if self.flag(0.1):
            return self.pick(["0", "1", "-1", "63", "0x8000000000000000"])
        return r64(self.i(NRD))

    def srcf32(self):
        if self.flag(0.15):
            return self.pick(["0f00000000", "0f3F800000", "0fBF000000", "0f7F800000", "0f00000001",
                              "0f4B000000", "0f7FC00000"])
        return r32(self.i(NR))

    def srcf64(self):
        if self.flag(0.1):
            return self.pick(["0d0000000000000000", "0d3FF0000000000000", "0dBFE0000000000000",
                              "0d7FF0000000000000", "0d0000000000000001"])
        return r64(self.i(NRD))

    def reg_of(self, t):
        bits = {"8": 16, "16": 16, "32": 32, "64": 64}[t.lstrip("usbf").rstrip("x2") or "32"] \
            if t not in ("f16x2", "bf16x2") else 32
        return self.dst(bits), bits

    def dst(self, bits):
        return {16: r16(self.i(NH)), 32: r32(self.i(NR)), 64: r64(self.i(NRD))}[bits]

    def src(self, bits):
        return {16: r16(self.i(NH)), 32: self.src32(), 64: self.src64()}[bits]

    # -- templates: each returns a list of instruction lines (without guards)
    def t_int_arith(self):
        t = self.pick(["u32", "s32", "u64", "s64"])
        b = 64 if t.endswith("64") else 32
        op = self.pick(["add", "sub", "mul.lo", "mul.hi", "mad.lo", "mad.hi", "min", "max", "add.sat",
                        "sub.sat", "mul.wide", "mad.wide", "mul24.lo", "mul24.hi", "mad24.lo", "mad24.hi",
                        "abs", "neg", "mad.hi.sat"])
        if op in ("add.sat", "sub.sat", "mad.hi.sat"):
            t, b = "s32", 32
        if op.startswith(("mul24", "mad24")) or op in ("mul.wide", "mad.wide"):
            t = self.pick(["u32", "s32"])
            b = 32
        d = self.dst(64 if op in ("mul.wide", "mad.wide") else b)
        if op in ("abs", "neg"):
            t = t.replace("u", "s")
            return [f"{op}.{t} {d}, {self.src(b)};"]
        if op.startswith(("mad", "mad24")):
            c = self.src(64) if op == "mad.wide" else self.src(b)
            return [f"{op}.{t} {d}, {self.src(b)}, {self.src(b)}, {c};"]
        return [f"{op}.{t} {d}, {self.src(b)}, {self.src(b)};"]

    def t_divrem(self):
        t = self.pick(["u32", "s32", "u64", "s64"])
        b = 64 if t.endswith("64") else 32
        op = self.pick(["div", "rem"])
        tmp = "%t3" if b == 32 else "%a3"
        return [f"or.b{b} {tmp}, {self.src(b)}, 1;", f"{op}.{t} {self.dst(b)}, {self.src(b)}, {tmp};"]

    def t_logic(self):
        b = self.pick([32, 64])
        op = self.pick(["and", "or", "xor", "not", "cnot", "shl", "shr.u", "shr.s", "popc", "clz", "brev",
                        "bfe.u", "bfe.s", "bfi"])
        d = self.dst(b)
        if op in ("and", "or", "xor"):
            return [f"{op}.b{b} {d}, {self.src(b)}, {self.src(b)};"]
        if op in ("not", "cnot", "brev"):
            return [f"{op}.b{b} {d}, {self.src(b)};"]
        if op in ("popc", "clz"):
            return [f"{op}.b{b} {r32(self.i(NR))}, {self.src(b)};"]
        if op.startswith("sh"):
            amt = self.pick([self.src32(), str(self.i(70))])
            if b == 64 and amt.startswith("%"):
                # ptxas 13.0 converts the shift amount of a 64-bit shift from float to
                # integer (F2I.U64.TRUNC) when an f32 instruction last wrote its register:
                # the amount goes through an integer instruction first
                self.prep.append(f"and.b32 %s0, {amt}, 0xFF;")
                amt = "%s0"
            ty = "b" if op == "shl" else op[-1]
            return [f"{op[:3]}.{ty}{b} {d}, {self.src(b)}, {amt};"]
        if op.startswith("bfe"):
            pos, ln = self.pos(b == 64), self.pos(b == 64)
            if op == "bfe.s" and b == 32 and not pos.startswith("%") and not ln.startswith("%") and int(pos) >= 32:
                # ptxas 13.0 folds bfe.s32 with a constant pos >= 32 and len > 0 to the
                # constant -1 (the ISA: every bit is a[31]), also through a mov of the
                # immediate into a register: the position is made data-dependent (pos .. pos+7)
                self.prep += [f"and.b32 %s0, {r32(self.i(NR))}, 7;", f"add.u32 %s0, %s0, {pos};"]
                pos = "%s0"
            return [f"bfe.{op[-1]}{b} {d}, {self.src(b)}, {pos}, {ln};"]
        return [f"bfi.b{b} {d}, {self.src(b)}, {self.src(b)}, {self.pos(b == 64)}, {self.pos(b == 64)};"]

    def pos(self, wide=False):
        """A bit position or length: a register (any value) or an immediate 0..255. For the
        64-bit forms the PTX ISA restricts both to 0..255 (ptxas's 64-bit sequences do not
        mask them as the 32-bit instructions do), so those take immediates."""
        if wide or not self.flag(0.7):
            return str(self.pick([0, 1, 7, 8, 16, 31, 32, 33, 40, 63, 64, 200]))
        return r32(self.i(NR))

    def t_bits32(self):
        op = self.pick(["prmt", "lop3", "shf.l.wrap", "shf.r.wrap", "shf.l.clamp", "shf.r.clamp", "dp4a", "dp2a"])
        d = r32(self.i(NR))
        if op in ("dp4a", "dp2a"):
            half = f".{self.pick(['lo', 'hi'])}" if op == "dp2a" else ""
            ta, tb = self.pick(["u32", "s32"]), self.pick(["u32", "s32"])
            return [f"{op}{half}.{ta}.{tb} {d}, {self.src32()}, {self.src32()}, {self.src32()};"]
        if op == "prmt":
            sel = self.pick([self.src32(), hex(self.i(1 << 16))])
            return [f"prmt.b32 {d}, {self.src32()}, {self.src32()}, {sel};"]
        if op == "lop3":
            return [f"lop3.b32 {d}, {self.src32()}, {self.src32()}, {self.src32()}, {self.i(256)};"]
        return [f"{op}.b32 {d}, {self.src32()}, {self.src32()}, {self.src32()};"]

    def t_setp(self):
        t = self.pick(["u32", "s32", "u64", "s64", "b32", "f32", "f64", "f16", "bf16"])
        if t in ("f16", "bf16"):
            t = "f16"
        cmp = self.pick(FCMP if t.startswith("f") else (ICMP if t[0] != "b" else ("eq", "ne")))
        if t[0] == "s" and cmp in ("lo", "ls", "hi", "hs"):
            cmp = "lt"
        b = {"f16": 16, "f32": 32, "f64": 64}.get(t, 64 if t.endswith("64") else 32)
        src = {16: lambda: r16(self.i(NH)), 32: self.srcf32 if t == "f32" else self.src32,
               64: self.srcf64 if t == "f64" else self.src64}[b]
        ftz = ".ftz" if t == "f32" and self.flag(0.3) else ""
        p0 = self.i(NP)
        # p|q with two distinct registers (the same register twice leaves the order of the writes open)
        dst = pr(p0) + (f"|{pr((p0 + 1 + self.i(NP - 1)) % NP)}" if t != "f16" and self.flag(0.3) else "")
        if self.flag(0.3):
            bop = self.pick(["and", "or", "xor"])
            neg = "!" if self.flag(0.3) else ""
            return [f"setp.{cmp}.{bop}{ftz}.{t} {dst}, {src()}, {src()}, {neg}{pr(self.i(NP))};"]
        return [f"setp.{cmp}{ftz}.{t} {dst}, {src()}, {src()};"]

    def t_select(self):
        op = self.pick(["selp32", "selp64", "set", "slct", "testp", "predlogic"])
        if op == "selp32":
            return [f"selp.b32 {r32(self.i(NR))}, {self.src32()}, {self.src32()}, {pr(self.i(NP))};"]
        if op == "selp64":
            return [f"selp.b64 {r64(self.i(NRD))}, {self.src64()}, {self.src64()}, {pr(self.i(NP))};"]
        if op == "set":
            dt = self.pick(["u32", "s32", "f32"])
            stt = self.pick(["u32", "s32", "f32"])
            cmp = self.pick(FCMP if stt == "f32" else ICMP[:6])
            src = self.srcf32 if stt == "f32" else self.src32
            return [f"set.{cmp}.{dt}.{stt} {r32(self.i(NR))}, {src()}, {src()};"]
        if op == "slct":
            ct = self.pick(["s32", "f32"])
            ftz = ".ftz" if ct == "f32" and self.flag(0.3) else ""
            c = self.srcf32() if ct == "f32" else self.src32()
            return [f"slct{ftz}.b32.{ct} {r32(self.i(NR))}, {self.src32()}, {self.src32()}, {c};"]
        if op == "testp":
            t = self.pick(["f32", "f64"])
            k = self.pick(["finite", "infinite", "number", "notanumber", "normal", "subnormal"])
            return [f"testp.{k}.{t} {pr(self.i(NP))}, {r32(self.i(NR)) if t == 'f32' else r64(self.i(NRD))};"]
        lo = self.pick(["and", "or", "xor"])
        return [f"{lo}.pred {pr(self.i(NP))}, {pr(self.i(NP))}, {pr(self.i(NP))};"]

    def t_f32(self):
        op = self.pick(["add", "sub", "mul", "fma", "div", "sqrt", "rcp", "min", "max", "abs", "neg",
                        "copysign", "mad"])
        d = r32(self.i(NR))
        rnd = "." + self.pick(RND)
        ftz = ".ftz" if self.flag(0.35) else ""
        sat = ".sat" if op in ("add", "sub", "mul", "fma", "mad") and self.flag(0.2) else ""
        a, b, c = self.srcf32(), self.srcf32(), self.srcf32()
        if op in ("add", "sub", "mul"):
            return [f"{op}{rnd}{ftz}{sat}.f32 {d}, {a}, {b};"]
        if op in ("fma", "mad"):
            return [f"{op}{rnd}{ftz}{sat}.f32 {d}, {a}, {b}, {c};"]
        if op == "div":
            return [f"div{rnd}{ftz}.f32 {d}, {a}, {b};"]
        if op in ("sqrt", "rcp"):
            return [f"{op}{rnd}{ftz}.f32 {d}, {a};"]
        if op in ("min", "max"):
            if self.flag(0.3):
                return [f"{op}{ftz}.NaN.f32 {d}, {a}, {b};"]
            return one_nan_at_most("f32", [a, b], f"{op}{ftz}.f32 {d}, {a}, {b};")
        if op in ("abs", "neg"):
            # of a NaN, the PTX ISA leaves the result an unspecified NaN, and ptxas picks an
            # FADD (canonical NaN) unguarded but an FSEL with a sign modifier (the NaN's
            # payload, sign changed) under a guard: the operand is made a number first
            return [f"{op}{ftz}.f32 {d}, {self.not_nan32(r32(self.i(NR)))};"]
        return [f"copysign.f32 {d}, {r32(self.i(NR))}, {r32(self.i(NR))};"]

    def t_f64(self):
        op = self.pick(["add", "sub", "mul", "fma", "div", "sqrt", "rcp", "min", "max", "abs", "neg", "copysign"])
        d = r64(self.i(NRD))
        rnd = "." + self.pick(RND)
        a, b, c = self.srcf64(), self.srcf64(), self.srcf64()
        if op in ("add", "sub", "mul", "div"):
            return one_nan_at_most("f64", [a, b], f"{op}{rnd}.f64 {d}, {a}, {b};")
        if op == "fma":
            return one_nan_at_most("f64", [a, b, c], f"fma{rnd}.f64 {d}, {a}, {b}, {c};")
        if op in ("sqrt", "rcp"):
            return [f"{op}{rnd}.f64 {d}, {a};"]
        if op in ("min", "max"):
            return one_nan_at_most("f64", [a, b], f"{op}.f64 {d}, {a}, {b};")
        if op in ("abs", "neg"):
            return [f"{op}.f64 {d}, {self.not_nan64(r64(self.i(NRD)))};"]
        return [f"copysign.f64 {d}, {r64(self.i(NRD))}, {r64(self.i(NRD))};"]

    def t_half(self):
        t = self.pick(["f16", "f16x2", "bf16", "bf16x2"])
        op = self.pick(["add", "sub", "mul", "fma", "min", "max", "neg", "abs"])
        reg = (lambda: r16(self.i(NH))) if t in ("f16", "bf16") else (lambda: r32(self.i(NR)))
        d = reg()
        if op in ("min", "max"):
            if self.flag(0.3):
                return [f"{op}.NaN.{t} {d}, {reg()}, {reg()};"]
            a, b = reg(), reg()
            return not_both_nan(t, a, b, f"{op}.{t} {d}, {a}, {b};")
        if op in ("neg", "abs"):
            # of a NaN: an unspecified NaN (PTX ISA), and ptxas folds abs/neg into the
            # operand modifiers of a consumer (a sign-bit operation) or not
            return [f"{op}.{t} {d}, {self.not_nan_half(t, reg())};"]
        mods = ".rn"
        if t.startswith("f16"):
            if self.flag(0.3):
                mods += ".ftz"
            if self.flag(0.2):
                mods += ".sat"
        elif op == "fma" and self.flag(0.2):
            mods += ".relu"
        if op == "fma":
            return [f"fma{mods}.{t} {d}, {reg()}, {reg()}, {reg()};"]
        return [f"{op}{mods}.{t} {d}, {reg()}, {reg()};"]

    def t_cvt_int(self):
        dt, stt = self.pick(INT_T), self.pick(INT_T)
        def rng(t):
            w = int(t[1:])
            return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)

        (dlo, dhi), (slo, shi) = rng(dt), rng(stt)
        sat = ".sat" if (slo < dlo or shi > dhi) and self.flag(0.4) else ""
        db = {8: 16, 16: 16, 32: 32, 64: 64}[int(dt[1:])]
        sb = {8: 16, 16: 16, 32: 32, 64: 64}[int(stt[1:])]
        return [f"cvt{sat}.{dt}.{stt} {self.dst(db)}, {self.dst(sb)};"]

    def t_cvt_float(self):
        k = self.pick(["i2f", "f2i", "f2f", "round", "pack", "tf32"])
        if k == "tf32":  # what Triton emits before a tf32 dot
            return [f"cvt.rna.tf32.f32 {r32(self.i(NR))}, {r32(self.i(NR))};"]
        if k == "i2f":
            dt = self.pick(["f32", "f64", "f16"])
            stt = self.pick(["u16", "s16", "u32", "s32", "u64", "s64"])
            db, sb = {"f32": 32, "f64": 64, "f16": 16}[dt], {16: 16, 32: 32, 64: 64}[int(stt[1:])]
            return [f"cvt.{self.pick(RND)}.{dt}.{stt} {self.dst(db)}, {self.dst(sb)};"]
        if k == "f2i":
            dt = self.pick(["u16", "s16", "u32", "s32", "u64", "s64"])
            stt = self.pick(["f32", "f64", "f16"])
            ftz = ".ftz" if stt == "f32" and self.flag(0.3) else ""
            sat = ".sat" if self.flag(0.2) else ""
            db, sb = {16: 16, 32: 32, 64: 64}[int(dt[1:])], {"f32": 32, "f64": 64, "f16": 16}[stt]
            return [f"cvt.{self.pick(IRND)}{ftz}{sat}.{dt}.{stt} {self.dst(db)}, {self.dst(sb)};"]
        if k == "round":
            t = self.pick(["f32", "f64"])
            ftz = ".ftz" if t == "f32" and self.flag(0.3) else ""
            b = 32 if t == "f32" else 64
            return [f"cvt.{self.pick(IRND)}{ftz}.{t}.{t} {self.dst(b)}, {self.dst(b)};"]
        if k == "pack":
            t = self.pick(["f16x2", "bf16x2"])
            extra = self.pick(["", ".relu"]) + (".satfinite" if t == "bf16x2" and self.flag(0.3) else "")
            return [f"cvt.rn{extra}.{t}.f32 {r32(self.i(NR))}, {self.srcf32()}, {self.srcf32()};"]
        pair = self.pick([("f32", "f64"), ("f64", "f32"), ("f16", "f32"), ("f32", "f16"), ("bf16", "f32"),
                          ("f32", "bf16"), ("f16", "f64"), ("f64", "f16")])
        dt, stt = pair
        bits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
        narrowing = bits[dt] < bits[stt] or (dt, stt) == ("bf16", "f32")
        mods = ""
        if narrowing:
            mods += "." + (self.pick(RND) if dt != "bf16" else "rn")
            if dt in ("f16", "bf16") and stt == "f32" and mods == ".rn" and self.flag(0.3):
                mods += ".relu"
            if dt == "bf16" and self.flag(0.2):
                mods += ".satfinite"
        if "f32" in (dt, stt) and dt != "bf16" and stt != "bf16" and self.flag(0.3) and stt != "f16" \
                and ".relu" not in mods:  # ptxas: "Illegal modifier '.ftz'" next to .relu
            mods += ".ftz"
        if dt == "f32" and stt == "f64" and self.flag(0.2):
            mods += ".sat"
        return [f"cvt{mods}.{dt}.{stt} {self.dst(bits[dt])}, {self.dst(bits[stt])};"]

    def t_mov(self):
        k = self.pick(["pack", "unpack", "mov32", "mov16"])
        if k == "pack":
            return [f"mov.b64 {r64(self.i(NRD))}, {{{r32(self.i(NR))}, {r32(self.i(NR))}}};"]
        if k == "unpack":
            return [f"mov.b64 {{{r32(self.i(NR))}, {r32(self.i(NR))}}}, {r64(self.i(NRD))};"]
        if k == "mov16":
            return [f"mov.b32 {r32(self.i(NR))}, {{{r16(self.i(NH))}, {r16(self.i(NH))}}};"]
        return [f"mov.b32 {r32(self.i(NR))}, {self.src32()};"]

    # -- collectives (never guarded, never inside a branch)
    def t_shfl(self):
        mode = self.pick(["up", "down", "bfly", "idx"])
        b = self.pick([self.src32(), str(self.i(40))])
        c = self.pick([hex(self.pick([0x1F, 0x0, 0x1C1F, 0x181F, 0x101F, 0x1E1F, 0x1F00, 0x0F, 0x7])), self.src32()])
        d = r32(self.i(NR)) + (f"|{pr(self.i(NP))}" if self.flag(0.4) else "")
        a = self.src32()
        if "|" in d and not any(x.startswith("%") for x in (a, b, c)):
            # ptxas 13.0 takes the predicate of a shfl whose operands are all immediates
            # for warp-uniform and may keep it as VOTEU.ANY of the lanes' predicates (one
            # value for the warp), although it depends on the lane: a register source
            a = r32(self.i(NR))
        return [f"shfl.sync.{mode}.b32 {d}, {a}, {b}, {c}, 0xffffffff;"]

    def t_vote(self):
        k = self.pick(["all", "any", "uni", "ballot", "redux", "activemask", "elect"])
        neg = "!" if self.flag(0.3) else ""
        if k == "ballot":
            return [f"vote.sync.ballot.b32 {r32(self.i(NR))}, {neg}{pr(self.i(NP))}, 0xffffffff;"]
        if k == "redux":
            op = self.pick(["add.u32", "add.s32", "min.u32", "min.s32", "max.u32", "max.s32", "and.b32", "or.b32",
                            "xor.b32"])
            return [f"redux.sync.{op} {r32(self.i(NR))}, {r32(self.i(NR))}, 0xffffffff;"]
        if k == "activemask":
            return [f"activemask.b32 {r32(self.i(NR))};"]
        if k == "elect":
            return [f"elect.sync {r32(self.i(NR))}|{pr(self.i(NP))}, 0xffffffff;"]
        return [f"vote.sync.{k}.pred {pr(self.i(NP))}, {neg}{pr(self.i(NP))}, 0xffffffff;"]

    # -- extended precision: one carry chain, never guarded, never inside a branch
    def t_carry(self):
        """A chain through CC.CF (PTX ISA §9.7.2): ``add.cc``/``sub.cc``/``mad{.lo,.hi}.cc``
        starts it, ``addc.cc``/``subc.cc``/``madc.cc`` continue it, ``addc``/``subc``/``madc``
        (or a ``.cc`` one) end it; 32- or 64-bit, one kind of link or add and mad mixed, sometimes with
        unrelated integer instructions between the links (CC.CF is state they leave alone).
        A chain always starts with an instruction that writes the flag: its value before
        any does is not specified."""
        t = self.pick(["u32", "s32", "u64", "s64"])
        b = 64 if t.endswith("64") else 32
        # ptxas keeps CC.CF as the hardware carry, which a subtraction writes and reads as
        # NOT borrow: where an add/mad link reads a flag a sub link wrote, or the reverse,
        # the H200 differs from the ISA's pseudocode (docs/validation.md); links of one
        # chain are additions (add, mad) or subtractions only
        kinds = self.pick([("add",), ("sub",), ("mad",), ("add", "mad")])
        links = 2 + self.i(4)
        lines = []
        for j in range(links):
            kind = self.pick(kinds)
            cc = ".cc" if j == 0 or j < links - 1 or self.flag(0.2) else ""
            head = kind if j == 0 else kind + "c"
            d = self.dst(b)
            if kind == "mad":
                half = self.pick([".lo", ".hi"])  # ptxas requires one for mad.cc and madc
                lines.append(f"{head}{half}{cc}.{t} {d}, {self.src(b)}, {self.src(b)}, {self.src(b)};")
            else:
                lines.append(f"{head}{cc}.{t} {d}, {self.src(b)}, {self.src(b)};")
            if j < links - 1 and self.flag(0.2):
                filler = getattr(self, self.pick(["t_int_arith", "t_logic", "t_bits32", "t_mov", "t_setp"]))()
                lines += self.take_prep() + filler
        return lines

    # -- match.sync: values that lanes share, full or partial membermasks
    def t_match(self):
        """``match.any``/``match.all`` (``.b32``/``.b64``; ``.all`` with or without the
        predicate) on a value that groups lanes: a register masked down to a few bits (for
        b64 also bits of the upper half only, so equal low halves do not decide), bits of
        the lane id, or a warp-uniform value. A membermask other than all lanes is used
        inside a branch that exactly its lanes take (a lane outside it executing match.sync
        is undefined), given as an immediate or a register."""
        b = self.pick([32, 64])
        mode = self.pick(["any", "all"])
        mm = self.pick([0xFFFFFFFF, 0xFFFFFFFF, 0x0000FFFF, 0x55555555, 0xF0F0F0F0, 0x80000001, 0x7FFFFFFE,
                        self.i(1 << 32) | 1])
        lines = []
        if mm != 0xFFFFFFFF:
            lines += ["mov.u32 %s0, %lanemask_eq;", f"and.b32 %s0, %s0, {mm:#x};", "setp.eq.u32 %pn0, %s0, 0;"]
        v = "%s0" if b == 32 else "%sd0"
        src = self.pick(["reg", "reg", "lane", "uniform"])
        if src == "reg":
            k = self.pick(["0x1", "0x3", "0x80000001", "0x300", "0xFFFFFFFF"] if b == 32 else
                          ["0x3", "0x100000000", "0x100000001", "0x8000000000000000", "0xFFFFFFFF00000000",
                           "0xFFFFFFFFFFFFFFFF"])
            lines.append(f"and.b{b} {v}, {r32(self.i(NR)) if b == 32 else r64(self.i(NRD))}, {k};")
        elif src == "lane":
            lines += ["mov.u32 %s0, %laneid;",
                      f"{self.pick(['shr.u32', 'and.b32'])} %s0, %s0, {self.pick([1, 2, 3, 4, 5, 7, 16])};"]
            if b == 64:  # the lane bits in the upper or the lower half
                lines += self.pick([["mov.b32 %t3, 0;", "mov.b64 %sd0, {%t3, %s0};"], ["cvt.u64.u32 %sd0, %s0;"]])
        elif b == 32:  # the same in every lane
            lines.append(self.pick(["mov.u32 %s0, %ctaid.x;",
                                    f"shfl.sync.idx.b32 %s0, {r32(self.i(NR))}, 0, 0x1f, 0xffffffff;"]))
        else:
            lines += [f"mov.b64 {{%t3, %s0}}, {r64(self.i(NRD))};", "shfl.sync.idx.b32 %t3, %t3, 0, 0x1f, 0xffffffff;",
                      "shfl.sync.idx.b32 %s0, %s0, 0, 0x1f, 0xffffffff;", "mov.b64 %sd0, {%t3, %s0};"]
        d = r32(self.i(NR)) + (f"|{pr(self.i(NP))}" if mode == "all" and self.flag(0.6) else "")
        mask = f"{mm:#x}"
        if self.flag(0.3):
            lines.append(f"mov.b32 %t3, {mask};")
            mask = "%t3"
        op = f"match.{mode}.sync.b{b} {d}, {v}, {mask};"
        if mm == 0xFFFFFFFF:
            return lines + [op]
        lab = f"$L_match{self.label}"
        self.label += 1
        return lines + [f"@%pn0 bra {lab};", op, f"{lab}:"]

    def t_shared(self):
        if self.slot >= SLOTS or self.flag(0.3):
            # red.shared into a common word, barrier, everyone reads it back
            w = self.i(COMMON)
            op = self.pick(["add.u32", "min.u32", "max.u32", "min.s32", "max.s32", "and.b32", "or.b32", "xor.b32"])
            return [f"red.shared.{op} [smem_common+{4 * w}], {r32(self.i(NR))};", "bar.sync 0;",
                    f"ld.shared.b32 {r32(self.i(NR))}, [smem_common+{4 * w}];", "bar.sync 0;"]
        s = self.slot
        self.slot += 1
        k = self.pick(["1", "ntid-1", "xor", "31", "33"])
        dist = {"1": 1, "ntid-1": -1, "xor": 0, "31": 31, "33": 33}[k]
        wide = self.flag(0.3)
        lines = [f"st.shared.{'b64' if wide else 'b32'} [%a0+{s * 8}], {r64(self.i(NRD)) if wide else r32(self.i(NR))};",
                 "bar.sync 0;"]
        if dist == 0:
            lines.append(f"xor.b32 %t1, %t0, {1 + self.i(31)};")
        else:
            lines.append(f"add.u32 %t1, %t0, {dist % 1024};")
        lines += ["rem.u32 %t1, %t1, %t2;", "mul.wide.u32 %a1, %t1, " + str(8 * SLOTS) + ";",
                  "add.s64 %a1, %a1, %a2;",
                  f"ld.shared.{'b64' if wide else 'b32'} {r64(self.i(NRD)) if wide else r32(self.i(NR))}, [%a1+{s * 8}];",
                  "bar.sync 0;"]
        return lines


def one_nan_at_most(t: str, srcs: list, line: str) -> list:
    """``line`` guarded so that it runs only when at most one of its register operands is
    a NaN. With several NaN operands the PTX ISA leaves open which payload the result
    carries (f64; and f32 min/max of two NaNs): the H200 follows the operand order of the
    SASS instruction, which ptxas chooses; a program cannot predict it."""
    regs = [x for x in srcs if x.startswith("%")]
    if len(regs) < 2:
        return [line]
    a, b = regs[0], regs[1]
    out = [f"setp.nan.{t} %pn0, {a}, {a};", f"setp.nan.and.{t} %pn1, {b}, {b}, %pn0;"]
    if len(regs) > 2:
        c = regs[2]
        out += [f"setp.nan.or.{t} %pn0, {b}, {b}, %pn0;", f"setp.nan.and.{t} %pn0, {c}, {c}, %pn0;",
                "or.pred %pn1, %pn1, %pn0;"]
    return out + [f"@!%pn1 {line}"]


def not_both_nan(t: str, a: str, b: str, line: str) -> list:
    """``line`` (a half-precision min/max) guarded so that it runs only when ``a`` and ``b``
    are not both NaN (in either half of a packed pair): the PTX ISA says only "d = NaN"
    there (the H200 returns the operand, quieted, when both are one register)."""
    if t in ("f16", "bf16"):
        return [f"setp.nan.{t} %pn0, {a}, {a};", f"setp.nan.and.{t} %pn1, {b}, {b}, %pn0;", f"@!%pn1 {line}"]
    return [f"setp.nan.{t} %pn0|%pn1, {a}, {a};", f"setp.nan.{t} %pn2|%pn3, {b}, {b};",
            "and.pred %pn0, %pn0, %pn2;", "and.pred %pn1, %pn1, %pn3;", "or.pred %pn1, %pn0, %pn1;",
            f"@!%pn1 {line}"]


PLAIN = ("t_int_arith", "t_divrem", "t_logic", "t_bits32", "t_setp", "t_select", "t_f32", "t_f64", "t_half",
         "t_cvt_int", "t_cvt_float", "t_mov")
COLLECTIVE = ("t_shfl", "t_vote", "t_shared", "t_match")
UNGUARDED = COLLECTIVE + ("t_carry",)  # written as drawn: no guard, not inside a branch
WEIGHTS = {"t_int_arith": 3, "t_divrem": 1, "t_logic": 3, "t_bits32": 2, "t_setp": 3, "t_select": 2,
           "t_f32": 5, "t_f64": 3, "t_half": 3, "t_cvt_int": 2, "t_cvt_float": 4, "t_mov": 1,
           "t_shfl": 2, "t_vote": 2, "t_shared": 2, "t_carry": 2, "t_match": 2}
_CHOICES = [n for n, w in WEIGHTS.items() for _ in range(w)]


def _prologue(block: int) -> list:
    L = []
    L += ["ld.param.u64 %a4, [conf_param_0];", "ld.param.u64 %a5, [conf_param_1];",
          "cvta.to.global.u64 %a4, %a4;", "cvta.to.global.u64 %a5, %a5;",
          "mov.u32 %t0, %tid.x;", "mov.u32 %t2, %ntid.x;", "mov.u32 %t3, %ctaid.x;",
          "mad.lo.u32 %t3, %t3, %t2, %t0;",
          f"mul.wide.u32 %a3, %t3, {IN_BYTES};", "add.s64 %a3, %a4, %a3;"]
    for i in range(NR):
        L.append(f"ld.global.b32 {r32(i)}, [%a3+{4 * i}];")
    for i in range(NRD):
        L.append(f"ld.global.b64 {r64(i)}, [%a3+{4 * NR + 8 * i}];")
    for i in range(NH):
        L.append(f"ld.global.b16 {r16(i)}, [%a3+{4 * NR + 8 * NRD + 2 * i}];")
    for i in range(NP):
        L.append(f"setp.lt.u32 {pr(i)}, {r32(i)}, {r32((i + 5) % NR)};")
    # shared-memory slots: this thread's base address, zeroed, and the common words
    L += ["mov.u32 %t1, smem;", "cvt.u64.u32 %a2, %t1;", f"mul.wide.u32 %a0, %t0, {8 * SLOTS};",
          "add.s64 %a0, %a0, %a2;"]
    L.append("mov.b64 %a1, 0;")
    for s in range(SLOTS):
        L.append(f"st.shared.b64 [%a0+{8 * s}], %a1;")
    L += ["setp.eq.u32 %pz, %t0, 0;", "mov.b32 %t1, 0;"]
    for w in range(COMMON):
        L.append(f"@%pz st.shared.b32 [smem_common+{4 * w}], %t1;")
    L.append("bar.sync 0;")
    return L


def _epilogue() -> list:
    L = ["mov.u32 %t0, %tid.x;", "mov.u32 %t2, %ntid.x;", "mov.u32 %t3, %ctaid.x;",
         "mad.lo.u32 %t3, %t3, %t2, %t0;", f"mul.wide.u32 %a3, %t3, {OUT_BYTES};", "add.s64 %a3, %a5, %a3;"]
    for i in range(NR):
        L.append(f"st.global.b32 [%a3+{4 * i}], {r32(i)};")
    for i in range(NRD):
        L.append(f"st.global.b64 [%a3+{4 * NR + 8 * i}], {r64(i)};")
    for i in range(NH):
        L.append(f"st.global.b16 [%a3+{4 * NR + 8 * NRD + 2 * i}], {r16(i)};")
    for i in range(NP):
        L.append(f"selp.u32 %t1, 1, 0, {pr(i)};")
        L.append(f"st.global.b32 [%a3+{IN_BYTES + 4 * i}], %t1;")
    L.append("ret;")
    return L


def render(body: list, block: int) -> str:
    head = [".version 8.3", ".target sm_90a", ".address_size 64", "",
            ".visible .entry conf(", "\t.param .u64 conf_param_0,", "\t.param .u64 conf_param_1", ")", "{",
            f"\t.reg .pred %p<{NP}>;", "\t.reg .pred %pz;", "\t.reg .pred %pn<4>;", "\t.reg .b32 %s<1>;", "\t.reg .b16 %sh<2>;", "\t.reg .b64 %sd<1>;", f"\t.reg .b16 %h<{NH}>;", f"\t.reg .b32 %r<{NR}>;",
            f"\t.reg .b64 %rd<{NRD}>;", "\t.reg .b32 %t<4>;", "\t.reg .b64 %a<6>;",
            f"\t.shared .align 8 .b8 smem[{8 * SLOTS * block}];",
            f"\t.shared .align 4 .b8 smem_common[{4 * COMMON}];", ""]
    lines = head + ["\t" + x if not x.endswith(":") else x for x in _prologue(block) + body + _epilogue()] + ["}", ""]
    return "\n".join(lines)


@st.composite
def programs(draw, min_len: int = 4, max_len: int = 40, control: bool = True):
    """``control=False``: no guards and no branches (one instruction's semantics alone,
    for pinning a disagreement on a template)."""
    g = Gen(draw)
    block = draw(st.sampled_from([32, 64, 96, 128]))
    grid = draw(st.sampled_from([1, 1, 2]))
    n = draw(st.integers(min_len, max_len))
    body, used = [], []
    while len(used) < n:
        name = draw(st.sampled_from(_CHOICES))
        used.append(name)
        lines = getattr(g, name)()
        body += g.take_prep()
        if name in UNGUARDED:
            body += lines
            continue
        if control and g.flag(0.12) and len(lines) == 1:  # a forward branch over this and up to two more instructions
            lab = f"$L_skip{g.label}"
            g.label += 1
            neg = "!" if g.flag(0.5) else ""
            inner = list(lines)
            for _ in range(draw(st.integers(0, 2))):
                nm = draw(st.sampled_from(PLAIN))
                used.append(nm)
                more = getattr(g, nm)()
                inner += g.take_prep() + more
            body += [f"@{neg}{pr(g.i(NP))} bra {lab};"] + inner + [f"{lab}:"]
            continue
        if control and g.flag(0.25) and len(lines) == 1 and guardable(lines[0]):
            neg = "!" if g.flag(0.5) else ""
            lines = [f"@{neg}{pr(g.i(NP))} {lines[0]}"]
        body += lines
    seed = draw(st.integers(0, 2 ** 31 - 1))
    return Program(render(body, block), grid, block, seed, tuple(used))


def guardable(line: str) -> bool:
    """Whether ``line`` may carry a guard predicate. ptxas 13.0 (sm_90a) miscompiles two
    guarded forms, so the generator writes them only unguarded or inside a branch region
    (which ptxas compiles correctly): every ``@p testp`` (the guard is dropped: the
    predicate is written whatever the guard), and ``@p set.<cmp>.f32.<t>`` (only the
    comparison is guarded; the conversion of the 0/-1 result to 0.0/1.0, IABS + I2FP, runs
    unguarded and turns the old value into ``float(|old|)``). docs/validation.md has the
    SASS."""
    return not line.startswith("testp.") and not re.match(r"set\.\w+\.f32\.", line)

"""The carry flag CC.CF (add.cc/addc, sub.cc/subc, mad.cc/madc; PTX ISA §9.7.2) and
match.sync (.any/.all, b32/b64; §9.7.13) on the interpreter and the symbolic executor of
the equivalence checker, on PTX that nvcc writes (tests/data/carry_match.cu: unsigned
__int128 arithmetic, 32-bit carry chains in inline asm, __match_any_sync and
__match_all_sync) and on small hand-written kernels."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, needs_nvcc
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module, parse_ptx
from kverify.verifier.equivalence.engine import Side, check_pair
from kverify.verifier.equivalence.symexec import Executor
from kverify.verifier.equivalence.algebra import make_algebra

DATA = ROOT / "tests" / "data"
M32, M64, M128 = (1 << 32) - 1, (1 << 64) - 1, (1 << 128) - 1


def _carry_match_run(n=64, seed=1):
    m = load_module(str(DATA / "carry_match.ptx"))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 64, 2 * n, dtype=np.uint64)
    b = rng.integers(0, 1 << 64, 2 * n, dtype=np.uint64)
    a[:8] = M64  # carries through every word
    b[:4] = 1
    b[8:12] = a[8:12]  # x - y = 0 and equal words: no borrow
    key = rng.integers(0, 4, n).astype(np.uint32)
    key64 = rng.integers(0, 2, n).astype(np.uint64) << np.uint64(40)  # equal low halves
    key64[32:] = 7  # the second warp: all equal
    bufs = {"a": ("uint64", 2 * n), "b": ("uint64", 2 * n), "key": ("uint32", n), "key64": ("uint64", n),
            "sum": ("uint64", 2 * n), "diff": ("uint64", 2 * n), "prod": ("uint64", 2 * n),
            "words": ("uint32", 8 * n), "groups": ("uint32", 4 * n)}
    spec = LaunchSpec.from_dict({"grid": [1, 1, 1], "block": [n, 1, 1],
                                 "buffers": {k: {"dtype": t, "shape": [s]} for k, (t, s) in bufs.items()},
                                 "outputs": ["sum", "diff", "prod", "words", "groups"]})
    r = run_kernel(m, m.kernels[0], spec, inputs={"a": a, "b": b, "key": key, "key64": key64})
    return r, a, b, key, key64


def test_nvcc_carry_chains_and_match_sync_compute_what_cuda_says():
    r, a, b, key, key64 = _carry_match_run()
    assert r.status == "complete" and r.findings == []
    o = {k: [int(x) for x in v] for k, v in r.outputs.items()}
    n = len(key)
    for i in range(n):
        x = int(a[2 * i]) | int(a[2 * i + 1]) << 64
        y = int(b[2 * i]) | int(b[2 * i + 1]) << 64
        assert o["sum"][2 * i] | o["sum"][2 * i + 1] << 64 == (x + y) & M128
        assert o["diff"][2 * i] | o["diff"][2 * i + 1] << 64 == (x - y) & M128
        assert o["prod"][2 * i] | o["prod"][2 * i + 1] << 64 == int(a[2 * i]) * int(b[2 * i])
        w = o["words"][8 * i:8 * i + 8]
        x96, y96 = x & ((1 << 96) - 1), y & ((1 << 96) - 1)
        assert w[0] | w[1] << 32 | w[2] << 64 | w[3] << 96 == x96 + y96  # add.cc, addc.cc, addc.cc, addc
        x0, x1, y0, y1 = x & M32, (x >> 32) & M32, y & M32, (y >> 32) & M32
        assert w[4] | w[5] << 32 == (x0 * y0 + x1 + (y1 << 32)) & M64  # mad.lo.cc, madc.hi
        assert w[6] | w[7] << 32 == (x - y) & M64  # sub.cc, subc
        warp = range(32 * (i // 32), 32 * (i // 32) + 32)
        g = o["groups"][4 * i:4 * i + 4]
        assert g[0] == sum(1 << (j % 32) for j in warp if key[j] == key[i])  # match.any.b32
        equal = len({int(key64[j]) for j in warp}) == 1
        assert (g[1], g[2]) == ((M32, 1) if equal else (0, 0))  # match.all.b64 d|p
        odd = sum(1 << (j % 32) for j in warp if j % 2 and key64[j] == key64[i])
        assert g[3] == (odd if i % 2 else 0)  # match.any.b64, membermask 0xaaaaaaaa, in a branch
    assert o["groups"][1] == 0 and o["groups"][4 * 32 + 1] == M32  # the first warp's keys differ


@needs_nvcc
def test_committed_carry_match_ptx_is_what_nvcc_writes(tmp_path):
    """The forms the tests rely on are nvcc's: 64-bit chains for __int128, match.sync with a
    register membermask, match.all with a predicate destination."""
    subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", str(tmp_path / "c.ptx"),
                    str(DATA / "carry_match.cu")], check=True, capture_output=True)
    body = lambda t: [l.split("//")[0].strip() for l in t.splitlines() if l.strip() and not l.strip().startswith(".")]
    ours = body((DATA / "carry_match.ptx").read_text())
    theirs = body((tmp_path / "c.ptx").read_text())
    assert ours == theirs
    text = "\n".join(ours)
    for form in ("add.cc.s64", "addc.cc.s64", "sub.cc.s64", "subc.cc.s64", "add.cc.u32", "addc.u32",
                 "mad.lo.cc.u32", "madc.hi.u32", "subc.u32", "match.any.sync.b32", "match.all.sync.b64",
                 "match.any.sync.b64"):
        assert form in text, form


# --------------------------------------------------------------------------- small kernels

HEAD = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<24>;
\t.reg .b64 %rd<24>;
\tld.param.u64 %rd0, [k_param_0];
\tld.param.u64 %rd1, [k_param_1];
\tcvta.to.global.u64 %rd0, %rd0;
\tcvta.to.global.u64 %rd1, %rd1;
\tmov.u32 %r0, %tid.x;
\tmul.wide.u32 %rd2, %r0, 24;
\tadd.s64 %rd2, %rd0, %rd2;
\tld.global.u32 %r1, [%rd2];
\tld.global.u32 %r2, [%rd2+4];
\tld.global.u32 %r3, [%rd2+8];
\tld.global.u32 %r4, [%rd2+12];
\tld.global.u32 %r5, [%rd2+16];
\tld.global.u32 %r6, [%rd2+20];
\tmul.wide.u32 %rd3, %r0, 32;
\tadd.s64 %rd3, %rd1, %rd3;
"""
TAIL = "".join(f"\tst.global.u32 [%rd3+{4 * i}], %r{10 + i};\n" for i in range(8)) + "\tret;\n}\n"

# x = (r1, r2, r3), y = (r4, r5, r6): the 96-bit sum (4 words), x - y and x0*c + x1 + y1<<32
# in 64 bits (2 words each; a power-of-two factor keeps the solver fast)
CHAIN = """\tadd.cc.u32 %r10, %r1, %r4;
\taddc.cc.u32 %r11, %r2, %r5;
\taddc.cc.u32 %r12, %r3, %r6;
\taddc.u32 %r13, 0, 0;
\tsub.cc.u32 %r14, %r1, %r4;
\tsubc.u32 %r15, %r2, %r5;
\tmad.lo.cc.u32 %r16, %r1, 65536, %r2;
\tmadc.hi.u32 %r17, %r1, 65536, %r5;
"""
WIDE = """\tmov.b64 %rd4, {%r1, %r2};
\tmov.b64 %rd5, {%r4, %r5};
\tadd.u64 %rd6, %rd4, %rd5;
\tsetp.lt.u64 %p0, %rd6, %rd4;
\tselp.u64 %rd7, 1, 0, %p0;
\tcvt.u64.u32 %rd8, %r3;
\tcvt.u64.u32 %rd9, %r6;
\tadd.u64 %rd8, %rd8, %rd9;
\tadd.u64 %rd8, %rd8, %rd7;
\tmov.b64 {%r10, %r11}, %rd6;
\tmov.b64 {%r12, %r13}, %rd8;
\tsub.u64 %rd10, %rd4, %rd5;
\tmov.b64 {%r14, %r15}, %rd10;
\tmul.wide.u32 %rd11, %r1, 65536;
\tcvt.u64.u32 %rd12, %r2;
\tadd.u64 %rd11, %rd11, %rd12;
\tmov.b64 %rd13, {%r20, %r5};
\tmov.u32 %r20, 0;
\tmov.b64 %rd13, {%r20, %r5};
\tadd.u64 %rd11, %rd11, %rd13;
\tmov.b64 {%r16, %r17}, %rd11;
"""
EXTRA = "\tmov.u32 %r18, 0;\n\tmov.u32 %r19, 0;\n"
LAUNCH = {"grid": [1, 1, 1], "block": [32, 1, 1],
          "buffers": {"k_param_0": {"dtype": "uint32", "shape": [6 * 32]},
                      "k_param_1": {"dtype": "uint32", "shape": [8 * 32]}},
          "outputs": ["k_param_1"]}


def _kernel(body, name="k"):
    m = parse_ptx(HEAD + body + TAIL, f"{name}.ptx")
    return m, m.kernels[0]


def _run(body, words):
    m, k = _kernel(body)
    r = run_kernel(m, k, LaunchSpec.from_dict(LAUNCH), inputs={"k_param_0": np.asarray(words, np.uint32)})
    assert r.status == "complete", r.reason
    return r.outputs["k_param_1"].reshape(32, 8).astype(np.int64)


def _words(seed=3):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 1 << 32, (32, 6), dtype=np.uint64).astype(np.uint32)
    w[:4, :3] = M32  # every carry set
    w[4:8, 3:] = w[4:8, :3]  # x == y: no borrow
    w[8:12, 3:] = 0
    return w


def test_chain_equals_the_64_bit_arithmetic_on_the_interpreter():
    w = _words()
    assert (_run(CHAIN + EXTRA, w) == _run(WIDE + EXTRA, w)).all()


def test_carry_flag_survives_other_instructions_and_a_false_guard():
    """CC.CF is per-thread state: instructions that do not name .cc leave it alone, and a
    guarded addc.cc whose guard is false neither computes nor writes it."""
    body = """\tadd.cc.u32 %r10, %r1, %r4;
\tsetp.lt.u32 %p1, %r0, 16;
\tadd.u32 %r20, %r2, %r5;
\tmul.lo.u32 %r21, %r20, 3;
\tmov.u32 %r12, 0;
\t@%p1 addc.cc.u32 %r12, 0, 0;
\taddc.u32 %r11, %r2, %r5;
\tmov.u32 %r13, 0;
\tmov.u32 %r14, 0;
\tmov.u32 %r15, 0;
\tmov.u32 %r16, 0;
\tmov.u32 %r17, 0;
""" + EXTRA
    w = _words()
    out = _run(body, w).astype(np.uint64)
    x0, y0, x1, y1 = (w[:, j].astype(np.uint64) for j in (0, 3, 1, 4))
    c = ((x0 + y0) >> np.uint64(32)).astype(np.uint64)
    lanes = np.arange(32)
    assert (out[:, 2] == np.where(lanes < 16, c, 0)).all()  # lanes < 16: addc.cc of 0, 0 gives the carry
    # and its carry-out (0 + 0 + c never carries) is 0 there; lanes >= 16 keep the add.cc carry
    assert (out[:, 1] == ((x1 + y1 + np.where(lanes < 16, 0, c)) & np.uint64(M32))).all()


def test_carry_reads_zero_before_any_cc_instruction():
    body = "\taddc.u32 %r10, %r1, %r4;\n" + "".join(f"\tmov.u32 %r{i}, 0;\n" for i in range(11, 18)) + EXTRA
    w = _words()
    out = _run(body, w).astype(np.uint64)
    assert (out[:, 0] == (w[:, 0].astype(np.uint64) + w[:, 3]) & np.uint64(M32)).all()


#: lanes grouped by value (lane % 4, warp-uniform lane / 32) under .any and .all, b32 and b64
MATCH_GROUPS = """\tand.b32 %r20, %r0, 3;
\tmatch.any.sync.b32 %r10, %r20, 0xffffffff;
\tmatch.all.sync.b32 %r11|%p1, %r20, 0xffffffff;
\tselp.u32 %r12, 1, 0, %p1;
\tshr.u32 %r21, %r0, 5;
\tmatch.all.sync.b32 %r13|%p2, %r21, 0xffffffff;
\tselp.u32 %r14, 1, 0, %p2;
\tmov.b64 %rd4, {%r21, %r20};
\tmatch.any.sync.b64 %r15, %rd4, 0xffffffff;
"""


def test_match_sync_groups_lanes_by_value():
    body = MATCH_GROUPS + """\tmatch.all.sync.b32 %r16, %r21, 0x0000ffff;
\tmov.u32 %r17, 0;
""" + EXTRA
    out = _run(body, _words())
    lanes = np.arange(32)
    assert (out[:, 0] == [sum(1 << j for j in lanes if j % 4 == i % 4) for i in lanes]).all()
    assert (out[:, 1] == 0).all() and (out[:, 2] == 0).all()
    assert (out[:, 3] == M32).all() and (out[:, 4] == 1).all()
    assert (out[:, 5] == out[:, 0]).all()  # the upper half decides the groups of the b64 form
    assert (out[:, 6] == 0xFFFF).all()  # lanes 16-31 are outside the membermask (undefined there; we compute it)


def test_match_sync_inside_a_divergent_branch_reads_the_executing_lanes_membermask():
    body = """\tmov.u32 %r10, 0;
\tand.b32 %r20, %r0, 1;
\tsetp.eq.u32 %p1, %r20, 0;
\t@%p1 bra $L_skip;
\tmov.u32 %r21, 0xaaaaaaaa;
\tshr.u32 %r22, %r0, 2;
\tmatch.any.sync.b32 %r10, %r22, %r21;
$L_skip:
""" + "".join(f"\tmov.u32 %r{i}, 0;\n" for i in range(11, 18)) + EXTRA
    out = _run(body, _words())
    lanes = np.arange(32)
    exp = [sum(1 << j for j in lanes if j % 2 and j // 4 == i // 4) if i % 2 else 0 for i in lanes]
    assert (out[:, 0] == exp).all()


# --------------------------------------------------------------------------- symbolic executor


def _side(body, name):
    m, k = _kernel(body, name)
    return Side(f"{name}.ptx", m, k, LaunchSpec.from_dict(LAUNCH))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["int", "bitexact"])
def test_symbolic_carry_chain_is_proved_equal_to_64_bit_arithmetic(model):
    r = check_pair(_side(CHAIN + EXTRA, "chain"), _side(WIDE + EXTRA, "wide"), model=model, timeout_s=60)
    assert r.verdict == "proved", r.message


def test_symbolic_dropped_carry_is_refuted(tmp_path):
    bad = CHAIN.replace("addc.cc.u32 %r11", "add.cc.u32 %r11")
    r = check_pair(_side(bad + EXTRA, "chain"), _side(WIDE + EXTRA, "wide"), model="int", timeout_s=60,
                   cex_dir=str(tmp_path))
    assert r.verdict == "refuted", r.message


def test_carry_in_the_real_model_is_unknown_with_the_reason():
    r = check_pair(_side(CHAIN + EXTRA, "chain"), _side(WIDE + EXTRA, "wide"), model="real", timeout_s=60,
                   test_on_unknown=False)
    assert r.verdict == "unknown" and "carry flag" in r.message, r.message


def test_symbolic_match_sync_equals_the_interpreter():
    body = MATCH_GROUPS + """\tmatch.any.sync.b32 %r16, %r20, 0x0f0f0f0f;
\tadd.u32 %r17, %r1, %r10;
""" + EXTRA
    m, k = _kernel(body)
    ex = Executor(m, k, LaunchSpec.from_dict(LAUNCH), make_algebra("int"), {}, "t")
    ex.run()
    terms = [t for t, _ in ex.output_terms()["k_param_1"]]
    got = np.array([t if isinstance(t, int) else -1 for t in terms]).reshape(32, 8)
    ref = _run(body, _words())
    assert (got[:, :7] == ref[:, :7]).all()
    assert (got[:, 7] == -1).all()  # an input plus the mask: a term


def test_symbolic_match_on_input_data_is_data_dependent():
    body = "\tmatch.any.sync.b32 %r10, %r1, 0xffffffff;\n" + "".join(
        f"\tmov.u32 %r{i}, 0;\n" for i in range(11, 18)) + EXTRA
    r = check_pair(_side(body, "a"), _side(body, "b"), model="int", timeout_s=60, test_on_unknown=False)
    assert r.verdict == "unknown" and "match.sync" in r.message, r.message


def test_lowering_keeps_carry_chains_and_match_sync():
    """IR -> CUDA keeps each instruction (the chain's asm statements follow each other)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    from kverify.lowering.build import compile_to_ptx
    from kverify.lowering.cuda import lower_module

    m = load_module(str(DATA / "carry_match.ptx"))
    text = compile_to_ptx(lower_module(m), name="carry_match")
    for form in ("add.cc.u32", "addc.cc.u32", "mad.lo.cc.u32", "madc.hi.u32", "sub.cc.u32", "subc.u32",
                 "match.any.sync.b32", "match.all.sync.b64"):
        assert form in text, form
    low = parse_ptx(text, "low.ptx")
    r0 = _carry_match_run()[0]
    # the lowered kernel computes what the original computes
    r, a, b, key, key64 = _carry_match_run()
    lk = low.kernels[0]
    import dataclasses

    orig = load_module(str(DATA / "carry_match.ptx")).kernels[0]
    lk = dataclasses.replace(lk, params=tuple(dataclasses.replace(lp, source_name=op.source_name)
                                              for lp, op in zip(lk.params, orig.params)))
    spec = LaunchSpec.from_dict({"grid": [1, 1, 1], "block": [64, 1, 1],
                                 "buffers": {k: {"dtype": str(v.dtype), "shape": [v.size]}
                                             for k, v in r0.outputs.items()} |
                                 {"a": {"dtype": "uint64", "shape": [128]}, "b": {"dtype": "uint64", "shape": [128]},
                                  "key": {"dtype": "uint32", "shape": [64]}, "key64": {"dtype": "uint64", "shape": [64]}},
                                 "outputs": list(r0.outputs)})
    lr = run_kernel(low, lk, spec, inputs={"a": a, "b": b, "key": key, "key64": key64})
    assert lr.status == "complete"
    for name, v in r0.outputs.items():
        assert np.array_equal(lr.outputs[name], v), name

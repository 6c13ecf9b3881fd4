"""Instruction coverage: special registers and predefined identifiers (PTX ISA §10, §4.4)."""
import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import parse_ptx

WARPSIZE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry ws(.param .u64 out)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %warpsize;
  mov.u32 %r2, WARP_SZ;
  mul.lo.u32 %r3, %r0, %r1;
  add.u32 %r4, %r3, %r2;
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r4;
  ret;
}
"""


def _spec(n):
    return LaunchSpec.from_dict({"kernel": "ws", "grid": [1, 1, 1], "block": [n, 1, 1],
                                 "buffers": {"0": {"dtype": "uint32", "shape": [n]}},
                                 "outputs": ["0"]})


def test_warpsize_and_warp_sz_are_32(tmp_path):
    """``%warpsize`` (§10.3) and the predefined identifier ``WARP_SZ`` (§4.4) both read 32."""
    m = parse_ptx(WARPSIZE, str(tmp_path / "ws.ptx"))
    r = run_kernel(m, m.kernel("ws"), _spec(64), inputs={"0": np.zeros(64, np.uint32)})
    assert r.status == "complete", r.reason
    assert [f.message for f in r.findings] == []
    tid = np.arange(64, dtype=np.uint32)
    out = next(iter(r.outputs.values()))
    np.testing.assert_array_equal(out, tid * 32 + 32)


def test_warp_sz_is_an_immediate_and_warpsize_a_special_register(tmp_path):
    from kverify.semantics.ir import instructions
    from kverify.semantics.ir.nodes import Imm, Reg

    m = parse_ptx(WARPSIZE, str(tmp_path / "ws.ptx"))
    movs = [i for i in instructions(m.kernel("ws").body) if i.opcode.startswith("mov.")]
    srcs = [i.operands[1] for i in movs]
    assert Imm(32) in srcs
    ws = [s for s in srcs if isinstance(s, Reg) and s.name == "%warpsize"]
    assert len(ws) == 1 and ws[0].is_special


def _check(tmp_path, text, capsys):
    import json

    from kverify.verifier.cli import main

    f = tmp_path / "ws.ptx"
    f.write_text(text)
    rc = main(["check", str(f), "--block", "64", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k["verdict"], {o["id"]: o for o in k["obligations"]}


def test_warpsize_kernel_is_race_free_and_its_per_warp_index_twin_races(tmp_path, capsys):
    """The symbolic checker reads %warpsize as 32: indexing out by
    ``tid`` is race-free (proved), indexing by ``tid / %warpsize`` (one slot per warp) makes the
    32 lanes of a warp store to one word (race.global violated, at the store)."""
    rc, verdict, obs = _check(tmp_path, WARPSIZE, capsys)
    assert rc == 0 and verdict == "verified"
    assert obs["race.global"]["status"] == "proved"
    twin = WARPSIZE.replace("mul.wide.u32 %rd3, %r0, 4;",
                            "div.u32 %r5, %r0, %warpsize;\n  mul.wide.u32 %rd3, %r5, 4;")
    rc, verdict, obs = _check(tmp_path, twin, capsys)
    assert rc == 1 and verdict == "violated"
    o = obs["race.global"]
    assert o["status"] == "violated" and o["rule"] == "race.global"
    store = 1 + twin.splitlines().index("  st.global.u32 [%rd4], %r4;")
    assert any(loc["line"] == store for loc in o["locations"])


EXTERN_CALL = """
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) ext_fn
(
  .param .b32 ext_fn_param_0
)
;
.visible .entry ws(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r0, %tid.x;
  {
  .param .b32 param0;
  st.param.b32 [param0], %r0;
  .param .b32 retval0;
  call.uni (retval0), ext_fn, (param0);
  ld.param.b32 %r1, [retval0];
  }
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
"""


def test_call_of_a_bodyless_extern_function_is_unknown_and_names_it(tmp_path, capsys):
    """A call of an ``.extern .func`` declared without a body: every obligation the call can
    affect is ``unknown`` (never proved), and each reason names the callee and the call line."""
    rc, verdict, obs = _check(tmp_path, EXTERN_CALL, capsys)
    assert verdict == "inconclusive" and rc == 3
    call = 1 + EXTERN_CALL.splitlines().index("  call.uni (retval0), ext_fn, (param0);")
    for rule in ("race.shared", "race.global", "barrier.named", "deadlock", "memory"):
        o = obs[rule]
        assert o["status"] == "unknown", rule
        text = json_text(o)
        assert "ext_fn" in text and f"line {call}" in text, (rule, text)


def json_text(o):
    import json

    return json.dumps(o)


GRIDDEP = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry ws(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  griddepcontrol.wait;
  setmaxnreg.inc.sync.aligned.u32 232;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r0, %tid.x;
  elect.sync %r1|%p1, 0xffffffff;
  selp.u32 %r2, 1, 0, %p1;
  add.u32 %r4, %r2, %r0;
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r4;
  griddepcontrol.launch_dependents;
  setmaxnreg.dec.sync.aligned.u32 40;
  ret;
}
"""


def test_griddepcontrol_setmaxnreg_elect_run_and_order_nothing(tmp_path, capsys):
    """griddepcontrol.wait (no predecessor grid: a no-op), launch_dependents and
    setmaxnreg.inc/dec move no data and order no accesses of one grid: the interpreter
    gives tid + (lane is the elected leader), the race proofs go through (``proved``, not
    only ``bounded`` as while setmaxnreg counted as async ordering), and the per-warp-index
    twin is ``violated`` with race.global at the store."""
    m = parse_ptx(GRIDDEP, str(tmp_path / "gd.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "ws", "grid": [1, 1, 1], "block": [128, 1, 1],
                                 "buffers": {"0": {"dtype": "uint32", "shape": [128]}},
                                 "outputs": ["0"]})
    r = run_kernel(m, m.kernel("ws"), spec, inputs={"0": np.zeros(128, np.uint32)})
    assert r.status == "complete", r.reason
    out = next(iter(r.outputs.values())).astype(np.int64)
    tid = np.arange(128)
    leaders = out - tid
    assert set(leaders.tolist()) == {0, 1}
    assert [int(leaders[w * 32:(w + 1) * 32].sum()) for w in range(4)] == [1, 1, 1, 1]

    f = tmp_path / "gd.ptx"
    import json

    from kverify.verifier.cli import main

    def check(text):
        f.write_text(text)
        rc = main(["check", str(f), "--block", "128", "--format", "json"])
        k = json.loads(capsys.readouterr().out)["kernels"][0]
        return rc, k["verdict"], {o["id"]: o for o in k["obligations"]}

    rc, verdict, obs = check(GRIDDEP)
    assert rc == 0 and verdict == "verified"
    assert obs["race.global"]["status"] == "proved" and obs["race.shared"]["status"] == "proved"
    twin = GRIDDEP.replace("mul.wide.u32 %rd3, %r0, 4;",
                           "shr.u32 %r5, %r0, 5;\n  mul.wide.u32 %rd3, %r5, 4;")
    rc, verdict, obs = check(twin)
    assert rc == 1 and verdict == "violated"
    o = obs["race.global"]
    assert o["status"] == "violated" and o["rule"] == "race.global"
    store = 1 + twin.splitlines().index("  st.global.u32 [%rd4], %r4;")
    assert any(loc["line"] == store for loc in o["locations"])


MMA = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry mma16816(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u64 %rd4, [pd];
  mov.u32 %r0, %laneid;
  mul.wide.u32 %rd5, %r0, 16;
  mul.wide.u32 %rd6, %r0, 8;
  add.s64 %rd7, %rd1, %rd5;
  add.s64 %rd8, %rd2, %rd6;
  add.s64 %rd9, %rd3, %rd5;
  add.s64 %rd10, %rd4, %rd5;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd7];
  ld.global.v2.u32 {%r5, %r6}, [%rd8];
  ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd9];
  mma.sync.aligned.m16n8k16.row.col.f32.TY.TY.f32 {%f4, %f5, %f6, %f7}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, %f3};
  st.global.v4.f32 [%rd10], {%f4, %f5, %f6, %f7};
  ret;
}
"""


def _frag(mat, coords, dtype):
    """Per-lane fragment words: coords(lane, i) -> (row, col) as the ISA's figure gives."""
    n = len(coords)
    out = np.zeros((32, n), dtype)
    for lane in range(32):
        for i in range(n):
            out[lane, i] = mat[coords(lane, i)]
    return out



@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_mma_m16n8k16_matches_numpy(tmp_path, ty):
    """mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: D = A B + C with the fragment layouts of
    PTX ISA §9.7.14.5.8 (A: a0..a7 at row g (+8 for a2,a3,a6,a7), col 2t+i%2 (+8 for a4..a7);
    B: b0..b3 at row 2t+i%2 (+8 for b2,b3), col g; C/D: row g (+8 for c2,c3), col 2t+i%2)."""
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (16, 16)).astype(np.float32) / 4
    B = rng.integers(-4, 5, (16, 8)).astype(np.float32) / 2
    C = rng.integers(-8, 9, (16, 8)).astype(np.float32)

    def bits16(x):
        if ty == "f16":
            return x.astype(np.float16).view(np.uint16).astype(np.uint32)
        return (x.astype(np.float32).view(np.uint32) >> 16)

    class Co:
        def __init__(self, f, n):
            self.f, self.n = f, n

        def __len__(self):
            return self.n

        def __call__(self, lane, i):
            return self.f(lane // 4, lane % 4, i)

    a_el = _frag(bits16(A), Co(lambda g, t, i: (g + (8 if i in (2, 3, 6, 7) else 0), 2 * t + i % 2 + (8 if i >= 4 else 0)), 8), np.uint32)
    b_el = _frag(bits16(B), Co(lambda g, t, i: (2 * t + i % 2 + (8 if i >= 2 else 0), g), 4), np.uint32)
    c_fr = _frag(C, Co(lambda g, t, i: (g + (8 if i >= 2 else 0), 2 * t + i % 2), 4), np.float32)
    a_w = (a_el[:, 0::2] | (a_el[:, 1::2] << 16)).astype(np.uint32)
    b_w = (b_el[:, 0::2] | (b_el[:, 1::2] << 16)).astype(np.uint32)

    text = MMA.replace("TY", ty)
    m = parse_ptx(text, str(tmp_path / "mma.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "mma16816", "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"0": {"dtype": "uint32", "shape": [128]},
                                             "1": {"dtype": "uint32", "shape": [64]},
                                             "2": {"dtype": "float32", "shape": [128]},
                                             "3": {"dtype": "float32", "shape": [128]}},
                                 "outputs": ["3"]})
    r = run_kernel(m, m.kernel("mma16816"), spec,
                   inputs={"0": a_w.reshape(-1), "1": b_w.reshape(-1), "2": c_fr.reshape(-1),
                           "3": np.zeros(128, np.float32)})
    assert r.status == "complete", r.reason
    assert [f.message for f in r.findings] == []
    d_fr = r.outputs["pd"].reshape(32, 4)
    want = _frag(A.astype(np.float64) @ B + C, Co(lambda g, t, i: (g + (8 if i >= 2 else 0), 2 * t + i % 2), 4), np.float32)
    np.testing.assert_array_equal(d_fr, want)


def test_mma_by_part_of_a_warp_is_barrier_divergence(tmp_path, capsys):
    """The seeded-bug twin: mma.sync.aligned under a lane-dependent guard (lanes 0..15 only)
    is reported as barrier.divergence at the mma line by ``check``."""
    import json

    from kverify.verifier.cli import main

    line = next(l for l in MMA.splitlines() if l.lstrip().startswith("mma.sync"))
    twin = MMA.replace("TY", "f16").replace(".reg .f32 %f<8>;", ".reg .f32 %f<8>;\n  .reg .pred %p<2>;")
    twin = twin.replace(line.replace("TY", "f16"), "  setp.lt.u32 %p1, %r0, 16;\n  @%p1 " + line.strip().replace("TY", "f16"))
    f = tmp_path / "mma_twin.ptx"
    f.write_text(twin)
    rc = main(["check", str(f), "--block", "32", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert rc == 1 and k["verdict"] == "violated"
    mma_line = 1 + next(i for i, l in enumerate(twin.splitlines()) if "mma.sync" in l)
    bad = {o["rule"]: o for o in k["obligations"] if o["status"] == "violated"}
    assert set(bad) == {"barrier.divergence", "uninitialized.register"}
    assert any(loc["line"] == mma_line for loc in bad["barrier.divergence"]["locations"])
    # and lanes 16..31, which skipped the mma, store a result no instruction wrote
    assert "undefined in 16 lane(s) of warp 0 (threads 0-31) of CTA (0,0,0), first thread 16 " in \
        bad["uninitialized.register"]["message"]

"""Soundness, as a property: for randomly generated small kernels with barriers, atomics and
shared memory, whenever the interpreter under a random schedule observes a race (or two
schedules compute different outputs), ``check`` on the same launch is not ``verified``.

The kernels are PTX written here: one CTA of two warps, a shared array of 64 words, and a
list of steps — stores and loads at ``(tid * a + b) % 64``, atomic adds (their result used
or not), and ``bar.sync`` — each step guarded or not by a lane condition; every thread
stores what it loaded to ``out[tid]``."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import parse_ptx
from kverify.verifier.check import check_kernel

pytestmark = pytest.mark.slow

THREADS = 64
RACES = {"race.shared", "race.global"}

HEAD = """.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 k_param_0)
.reqntid 64, 1, 1
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, 0;
  mov.u32 %r9, s;
"""
TAIL = """  ld.param.u64 %rd1, [k_param_0];
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
"""

step = st.one_of(
    st.tuples(st.just("st"), st.integers(0, 3), st.integers(0, 63), st.sampled_from([None, 0, 1])),
    st.tuples(st.just("ld"), st.integers(0, 3), st.integers(0, 63), st.sampled_from([None, 0, 1])),
    st.tuples(st.just("atom"), st.integers(0, 3), st.integers(0, 63), st.booleans()),
    st.tuples(st.just("bar"),),
)


def ptx(steps) -> str:
    out, n = [HEAD], 0
    for s in steps:
        n += 1
        if s[0] == "bar":
            out.append("  bar.sync 0;\n")
            continue
        kind, a, b, extra = s
        out.append(f"  mul.lo.u32 %r2, %r0, {a};\n  add.u32 %r2, %r2, {b};\n  and.b32 %r2, %r2, 63;\n"
                   f"  shl.b32 %r3, %r2, 2;\n  add.u32 %r4, %r9, %r3;\n")
        guard = ""
        if kind in ("st", "ld") and extra is not None:
            # only the threads of warp ``extra`` take this step
            out.append(f"  shr.u32 %r5, %r0, 5;\n  setp.eq.u32 %p1, %r5, {extra};\n")
            guard = "@%p1 "
        if kind == "st":
            out.append(f"  {guard}st.shared.u32 [%r4], %r0;\n")
        elif kind == "ld":
            out.append(f"  {guard}ld.shared.u32 %r6, [%r4];\n  {guard}add.u32 %r1, %r1, %r6;\n")
        else:
            out.append("  atom.shared.add.u32 %r7, [%r4], 1;\n")
            if extra:
                out.append("  add.u32 %r1, %r1, %r7;\n")
    out.append(TAIL)
    return "".join(out)


def spec():
    return LaunchSpec.from_dict({"kernel": "k", "grid": [1, 1, 1], "block": [THREADS, 1, 1],
                                 "buffers": {"k_param_0": {"dtype": "uint32", "shape": [THREADS]}},
                                 "outputs": ["k_param_0"]})


def observed(module, kernel, launch, order_dependent=False) -> str | None:
    """What random schedules show: a race finding, or outputs that differ between schedules
    (a wrong result on some schedule) unless ``order_dependent`` — atomics whose returned
    value is used make the outputs depend on the order of the atomics, which is no bug."""
    outs = []
    for seed in range(4):
        r = run_kernel(module, kernel, launch, schedule="random", seed=seed, inputs={})
        hit = sorted(f.rule for f in r.findings if f.rule in RACES)
        if hit:
            return f"seed {seed}: {hit[0]}"
        if r.status == "complete":
            outs.append(np.asarray(r.outputs["k_param_0"]).copy())
    if not order_dependent and any(not np.array_equal(outs[0], o) for o in outs[1:]):
        return "outputs differ between random schedules"
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=6))
def test_what_a_random_schedule_observes_is_never_verified(steps):
    text = ptx(steps)
    m = parse_ptx(text, "gen.ptx")
    k = m.kernel("k")
    launch = spec()
    seen = observed(m, k, launch, order_dependent=any(s[0] == "atom" and s[3] for s in steps))
    if seen is None:
        return
    rep = check_kernel(m, k, launch, path="gen.ptx")
    assert rep.verdict != "verified", f"{seen}, yet check says verified:\n{text}"


def test_the_generator_reaches_races_and_clean_kernels():
    racy = ptx([("st", 1, 0, None), ("ld", 1, 1, None)])
    m = parse_ptx(racy, "racy.ptx")
    assert observed(m, m.kernel("k"), spec()) is not None
    clean = ptx([("st", 1, 0, None), ("bar",), ("ld", 1, 1, None)])
    m = parse_ptx(clean, "clean.ptx")
    assert observed(m, m.kernel("k"), spec()) is None
    assert check_kernel(m, m.kernel("k"), spec(), path="clean.ptx").verdict == "verified"

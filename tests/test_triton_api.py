"""kverify.triton.check from the call site, no launch JSON: the zoo's Triton kernels and three
of our own (masked row softmax, tl.dot matmul with num_stages=3, TMA TensorDescriptor matmul)
are verified; their seeded-bug twins are violated with the expected rule at the Python line of
the bug (tests/triton_kernels.py). Compiled by Triton for sm_90a without a GPU."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

# a cache of this run's own: Triton keys its cache by source, not path, so a kernel compiled
# from another checkout would carry that checkout's file names into the findings
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kverify-test-triton-")

triton = pytest.importorskip("triton", reason="kverify.triton needs triton (pip install 'kverify[triton]')")
torch = pytest.importorskip("torch", reason="the Triton call sites pass torch tensors (pip install torch)")

import kverify  # noqa: E402
from kverify.semantics.ir import KernelError  # noqa: E402

import triton_kernels as K  # noqa: E402

from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

KFILE = os.path.abspath(K.__file__)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _violated(rep, oid, rule, line):
    assert rep.verdict == "violated", str(rep)
    o = rep.obligation(oid)
    assert (o.status, o.rule) == ("violated", rule), str(rep)
    assert (os.path.abspath(o.locations[0].path), o.locations[0].line) == (KFILE, line), str(rep)
    assert not os.path.isabs(o.locations[0].path)  # relative to the working directory
    assert any(f.rule == rule and f.locations[0].line == line for f in rep.findings) or oid.startswith("race")


# ----------------------------------------------------------------------------- the zoo's kernels


def test_zoo_add_verifies_and_its_parameters_have_python_names():
    n = 3000
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    call = kverify.triton.compile(K.add_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, y, out, n,
                                  BLOCK=1024)
    assert call.names == ["x_ptr", "y_ptr", "out_ptr", "n_elements", "global_scratch", "profile_scratch"]
    assert call.launch["grid"] == [3, 1, 1] and call.launch["block"] == [128, 1, 1]
    assert call.launch["args"] == {"n_elements": 3000, "global_scratch": 0, "profile_scratch": 0}
    assert call.signature["x_ptr"] == "*fp32" and call.constexprs == {"BLOCK": 1024}
    rep = kverify.triton.check(K.add_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, y, out, n, BLOCK=1024)
    assert rep.verdict == "verified", str(rep)
    r = kverify.triton.run(K.add_kernel, (3,), x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(r.outputs["out_ptr"], (x + y).numpy())


@pytest.mark.slow
@pytest.mark.slow
def test_zoo_matmul_verifies():
    M, N, Kk = 200, 144, 160
    a, b, c = torch.randn(M, Kk).half(), torch.randn(Kk, N).half(), torch.empty(M, N)
    rep = kverify.triton.check(K.matmul_kernel, (triton.cdiv(M, 64) * triton.cdiv(N, 64),), a, b, c, M, N, Kk,
                               a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                               BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3)
    assert rep.verdict == "verified", str(rep)


@pytest.mark.slow
@pytest.mark.slow
def test_zoo_tma_matmul_verifies_with_the_compiled_box_and_swizzle():
    M, N, Kk = 256, 256, 384
    a, b, c = torch.randn(M, Kk).half(), torch.randn(Kk, N).half(), torch.empty(M, N).half()
    descs = (TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [64, 128]),
             TensorDescriptor.from_tensor(c, [128, 128]))
    kw = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=3)
    call = kverify.triton.compile(K.tma_matmul_kernel, (4,), *descs, M, N, Kk, **kw)
    tm = call.launch["tensormaps"]
    # B's 64x128 block is split by the compiler into 128-byte-wide (64 fp16) boxes, 128B swizzle
    assert tm["b_desc"] == {"dtype": "float16", "shape": [Kk, N], "strides": [N, 1], "box": [64, 64],
                            "swizzle": "128B", "buffer": "b_desc.base"}
    assert tm["a_desc"]["box"] == [128, 64] and tm["c_desc"]["box"] == [128, 64]
    assert call.names[:5] == ["a_desc", "a_desc.shape[0]", "a_desc.shape[1]", "a_desc.strides[0]",
                              "a_desc.strides[1]"]
    assert call.launch["dynamic_smem"] == call.metadata["shared"] == 98328
    rep = kverify.triton.check(K.tma_matmul_kernel, (4,), *descs, M, N, Kk, **kw)
    assert rep.verdict == "verified", str(rep)
    assert rep.obligation("mbarrier.parity").status == "proved"


# ----------------------------------------------------------------------------- masked row softmax


def _softmax(fn):
    x, out = torch.randn(6, 100), torch.empty(6, 100)
    return kverify.triton.check(fn, (6,), out, x, x.stride(0), out.stride(0), 100, BLOCK=128)


def test_softmax_verifies():
    assert _softmax(K.softmax_kernel).verdict == "verified"


def test_softmax_with_an_off_by_one_mask_reads_past_the_input():
    rep = _softmax(K.softmax_kernel__mask_off_by_one)
    _violated(rep, "memory", "bounds", K.bug_line(K.softmax_kernel__mask_off_by_one))
    assert "past the end of in_ptr" in rep.obligation("memory").message
    res = [r for r in rep.to_sarif()["runs"][0]["results"] if r["ruleId"] == "bounds"]
    assert len(res) == 1
    loc = res[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == os.path.relpath(KFILE)
    assert loc["region"]["startLine"] == K.bug_line(K.softmax_kernel__mask_off_by_one)


# ----------------------------------------------------------------------------- tl.dot matmul, num_stages=3


def _dot(fn):
    M, N, Kk = 96, 80, 128
    a, b, c = torch.randn(M, Kk).half(), torch.randn(Kk, N).half(), torch.empty(M, N)
    return kverify.triton.check(fn, (2, 2), a, b, c, M, N, Kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_stages=3)


@pytest.mark.slow
def test_dot_matmul_three_stages_verifies():
    rep = _dot(K.dot_matmul_kernel)
    assert rep.verdict == "verified", str(rep)
    ptx = open(rep.kernels[0].path).read()
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async" in ptx  # the pipelined sm_90a form


@pytest.mark.slow
def test_dot_matmul_without_the_row_mask_writes_past_c():
    rep = _dot(K.dot_matmul_kernel__no_row_mask)
    _violated(rep, "memory", "bounds", K.bug_line(K.dot_matmul_kernel__no_row_mask))
    assert "past the end of c_ptr" in rep.obligation("memory").message


# ----------------------------------------------------------------------------- TMA descriptor matmul


def _desc(fn):
    M, N, Kk = 128, 128, 256
    a, b, c = torch.randn(M, Kk).half(), torch.randn(Kk, N).half(), torch.empty(M, N).half()
    d = [TensorDescriptor.from_tensor(t, [64, 64]) for t in (a, b, c)]
    return kverify.triton.check(fn, (2, 2), *d, Kk, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, num_stages=3)


@pytest.mark.slow
@pytest.mark.slow
def test_descriptor_matmul_verifies():
    rep = _desc(K.desc_matmul_kernel)
    assert rep.verdict == "verified", str(rep)


@pytest.mark.slow
def test_descriptor_matmul_with_overlapping_store_tiles_races_on_c():
    rep = _desc(K.desc_matmul_kernel__overlapping_tiles)
    _violated(rep, "race.async", "race.async-pending", K.bug_line(K.desc_matmul_kernel__overlapping_tiles))
    assert "global c_desc.base" in rep.obligation("race.async").message


def test_descriptor_matmul_outputs_match_torch():
    M, N, Kk = 128, 128, 256
    a, b, c = torch.randn(M, Kk).half(), torch.randn(Kk, N).half(), torch.empty(M, N).half()
    d = [TensorDescriptor.from_tensor(t, [64, 64]) for t in (a, b, c)]
    r = kverify.triton.run(K.desc_matmul_kernel, (2, 2), *d, Kk, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, num_stages=3)
    # Triton 3.6 publishes its mbarrier inits with bar.sync only: the init-fence warning, nothing else
    assert r.status == "complete" and {f.rule for f in r.findings} == {"mbarrier.init-fence"}
    got = torch.from_numpy(r.outputs["c_desc.base"].view(np.float16)).float()
    torch.testing.assert_close(got, (a.float() @ b.float()), atol=0.06, rtol=0.01)


# ----------------------------------------------------------------------------- bad calls


def test_placeholders_and_bad_calls():
    out = kverify.Tensor((6, 100), "fp32")
    x = kverify.Tensor((6, 100), "float32")
    call = kverify.triton.compile(K.softmax_kernel, (6,), out, x, 100, 100, 100, BLOCK=128)
    assert call.inputs == {}  # placeholders: random contents
    assert call.launch["buffers"]["in_ptr"] == {"dtype": "float32", "shape": [6, 100]}
    with pytest.raises(KernelError, match="Keyword argument nope was specified but unrecognised"):
        kverify.triton.compile(K.softmax_kernel, (6,), out, x, 100, 100, 100, BLOCK=128, nope=1)
    with pytest.raises(KernelError, match=r"triton_kernels.py:\d+:1: softmax_kernel: .*missing"):
        kverify.triton.compile(K.softmax_kernel, (6,), out, x, BLOCK=128)
    with pytest.raises(KernelError, match="takes a @triton.jit function"):
        kverify.triton.check(lambda: None, (1,))


def test_arguments_that_share_memory_are_refused():
    # (each became a buffer of its own: an in-place softmax's race between programs was proved absent)
    x = torch.randn(6, 100)
    with pytest.raises(KernelError, match=r"triton_kernels.py:\d+:1: softmax_kernel: arguments in_ptr and out_ptr "
                                          r"share memory \(an in-place call or overlapping views\)"):
        kverify.triton.compile(K.softmax_kernel, (6,), x, x, 100, 100, 100, BLOCK=128)
    base = torch.randn(6 * 100 + 1)
    with pytest.raises(KernelError, match="share memory"):
        kverify.triton.compile(K.softmax_kernel, (6,), base[1:], base[:-1], 100, 100, 100, BLOCK=128)
    # views of one storage that do not overlap are separate buffers
    call = kverify.triton.compile(K.softmax_kernel, (3,), base[:300], base[300:600], 100, 100, 100, BLOCK=128)
    assert set(call.launch["buffers"]) >= {"in_ptr", "out_ptr"}


def test_triton_kernel_whose_given_flag_skips_every_barrier_is_never_verified():
    x, out = torch.randn(4, 100), torch.empty(4, 100)
    off = torch.tensor([0], dtype=torch.int32)
    rep = kverify.triton.check(K.guarded_softmax_kernel, (4,), off, out, x, 100, BLOCK=128)
    assert rep.verdict == "inconclusive"
    for oid in ("barrier.named", "deadlock"):
        o = rep.obligation(oid)
        assert o.status == "unknown" and o.message.startswith("not exercised: the run executed none of bar.sync")
    assert rep.inputs["flag_ptr"] is off
    rep = kverify.triton.check(K.guarded_softmax_kernel, (4,), torch.tensor([1], dtype=torch.int32), out, x, 100,
                               BLOCK=128)
    assert rep.verdict == "verified"


def test_replay_command_runs_on_the_given_inputs():
    import shlex
    import subprocess
    import sys

    rep = _softmax(K.softmax_kernel__mask_off_by_one)
    replay = rep.obligation("memory").counterexample["replay"]
    assert " --inputs " in replay
    argv = shlex.split(replay)
    assert argv[:2] == ["kverify", "run"]
    r = subprocess.run([sys.executable, "-m", "kverify", *argv[1:]], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bounds: " in r.stdout and f"{os.path.relpath(KFILE)}:{K.bug_line(K.softmax_kernel__mask_off_by_one)}" \
        in r.stdout


@pytest.mark.slow
def test_check_triton_from_the_command_line():
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(KFILE))

    def cli(*a):
        return subprocess.run([sys.executable, "-m", "kverify", "check", "--triton", *a], cwd=root,
                              capture_output=True, text=True, timeout=300)

    spec = "tests/triton_kernels.py:softmax_kernel__mask_off_by_one"
    args = ["--grid", "6", "--arg", "out_ptr=6x100:fp32", "--arg", "in_ptr=6x100:float32", "--arg", "in_stride=100",
            "--arg", "out_stride=100", "--arg", "n_cols=100", "--arg", "BLOCK=128"]
    r = cli(spec, *args)
    line = K.bug_line(K.softmax_kernel__mask_off_by_one)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "violated  memory safety" in r.stdout and f"tests/triton_kernels.py:{line}:" in r.stdout
    r = cli("tests/triton_kernels.py:softmax_kernel", *args, "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    import json

    assert json.loads(r.stdout)["verdict"] == "verified"
    r = cli("tests/triton_kernels.py:softmax_kernel", "--grid", "6", "--arg", "n_cols=100")
    assert r.returncode == 2
    assert "softmax_kernel: no --arg for out_ptr, in_ptr, in_stride, out_stride, BLOCK" in r.stderr
    for bad in ("4.5x100", "4x-100", "1e2", "x100"):  # (digits anywhere were dimensions: 4.5x100 was 4x5x100)
        r = cli("tests/triton_kernels.py:softmax_kernel", "--grid", "6", "--arg", f"in_ptr={bad}:fp32")
        assert r.returncode == 2 and f"--arg in_ptr: a tensor is SHAPE:DTYPE such as 4x100:fp32 (SHAPE: N or AxB...), " \
            f"got '{bad}:fp32'" in r.stderr, r.stdout + r.stderr

"""Regenerate the Triton kernel zoo: real Triton-emitted PTX for sm_90a, plus seeded-bug
mutations of the TMA matmul, plus manifest.json.

Usage (from anywhere):   python tests/zoo/triton/generate.py [--check]

Needs triton (pinned: 3.6.0, ``pip install triton==3.6.0``) and ``ptxas`` on PATH. No GPU
is needed: ``triton.compile(..., target=GPUTarget("cuda", 90, 32))`` emits PTX offline.
triton is NOT a dependency of kverify; the committed .ptx files are what the tests read.

Post-processing applied to Triton's PTX (nothing inside the function body changes):
  * ``.file`` paths are made machine-independent: this script becomes
    ``tests/zoo/triton/generate.py``, triton's own files ``triton/...``;
  * the DWARF ``.section .debug_*`` blocks after the function are dropped (they only
    re-encode the absolute build directory as bytes). ``.file``/``.loc`` line info stays,
    so ``ptxas -lineinfo`` still maps every instruction to a line of this file.

Mutations are single-purpose text edits on the clean ``tma_matmul.ptx``; every edit asserts
that its pattern matched exactly once, and removed lines are replaced by a comment line
(``// [mutation] removed: ...``) so that all mutants keep the clean file's line numbers.
``--check`` regenerates into a temporary directory and diffs against the committed files.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_REL = "tests/zoo/triton/generate.py"
TRITON_VERSION = "3.6.0"

try:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit(
        "generate.py needs triton to regenerate the PTX (pip install triton==3.6.0); "
        "the committed .ptx files do not need it."
    )

TARGET = GPUTarget("cuda", 90, 32)
DIV16 = [["tt.divisibility", 16]]

# --------------------------------------------------------------------------------------
# Kernels. Keep these line numbers stable-ish: the PTX .loc directives point at them.
# --------------------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


# --------------------------------------------------------------------------------------
# Compilation and post-processing
# --------------------------------------------------------------------------------------


def compile_ptx(fn, signature, constexprs, attrs, num_warps, num_stages):
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(src, target=TARGET,
                              options={"num_warps": num_warps, "num_stages": num_stages})
    return compiled.asm["ptx"], compiled.metadata


def normalize_ptx(ptx: str, this_file: str = __file__, repo_rel: str = REPO_REL) -> str:
    """Machine-independent .file paths (``this_file`` becomes ``repo_rel``, triton's own files
    ``triton/...``); drop the DWARF sections (see module docstring). The other generators of our
    Triton kernels (generate_softmax.py, ../layernorm/generate.py) use it too."""
    this_file = os.path.abspath(this_file)
    triton_root = os.path.dirname(os.path.dirname(os.path.abspath(triton.__file__)))

    def fix_file(m):
        path = m.group(2)
        if os.path.abspath(path) == this_file:
            path = repo_rel
        elif path.startswith(triton_root + os.sep):
            path = os.path.relpath(path, triton_root)
        return f'{m.group(1)}"{path}"'

    ptx = re.sub(r'^(\s*\.file\s+\d+\s+)"([^"]*)"', fix_file, ptx, flags=re.M)
    cut = re.search(r"^\s*\.section\s+\.debug_", ptx, flags=re.M)
    if cut:
        ptx = ptx[: cut.start()].rstrip() + "\n"
    assert os.path.dirname(this_file) not in ptx, "absolute path left in PTX"
    return ptx


def entry_and_params(ptx: str):
    m = re.search(r"\.visible\s+\.entry\s+(\w+)\(\s*(.*?)\)", ptx, flags=re.S)
    assert m, "no .entry found"
    params = []
    for line in m.group(2).split(","):
        line = line.strip()
        pm = re.match(r"\.param\s+(.*?)\s*(\w+)(\[\d+\])?$", line)
        assert pm, line
        params.append({"name": pm.group(2), "type": (pm.group(1) + (pm.group(3) or "")).strip()})
    return m.group(1), params


def ptxas_ok(path: str) -> None:
    r = subprocess.run(["ptxas", "-arch=sm_90a", "-lineinfo", path, "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ptxas rejected {path}:\n{r.stderr}")


# --------------------------------------------------------------------------------------
# Mutations of tma_matmul.ptx (each: exactly one match, line numbers preserved)
# --------------------------------------------------------------------------------------


def _find_one(lines, pred, what):
    hits = [i for i, l in enumerate(lines) if pred(l)]
    assert len(hits) == 1, f"{what}: expected exactly one match, got {len(hits)} at {[h + 1 for h in hits]}"
    return hits[0]


def _find_all(lines, pred):
    return [i for i, l in enumerate(lines) if pred(l)]


def _loop_bounds(lines):
    """(header, backedge) line indexes of the K loop: the only label with a backward bra."""
    hdr = _find_one(lines, lambda l: "Inner Loop Header" in l, "loop header")
    label = lines[hdr].split(":")[0].strip()
    back = _find_one(lines, lambda l: re.search(rf"\bbra\s+{re.escape(label)};", l) is not None, "back edge")
    assert back > hdr
    return hdr, back


def _removed(line):
    return "\t// [mutation] removed: " + line.strip()


def mutate_parity_never_flips(ptx):
    lines = ptx.split("\n")
    i = _find_one(lines, lambda l: "mbarrier.try_wait.parity" in l, "try_wait.parity")
    m = re.match(r"^(\s*mbarrier\.try_wait\.parity\.shared\.b64\s+\w+,\s*\[%r\d+\],\s*)(%r\d+)(;\s*)$", lines[i])
    assert m, lines[i]
    lines[i] = m.group(1) + "0" + m.group(3)
    return "\n".join(lines), i + 1, {
        "rule": "mbarrier.parity",
        "line": i + 1,
        "description": (
            f"The consumer's full-barrier wait uses the constant parity 0 instead of the phase "
            f"register {m.group(2)} (which the loop flips each time the stage index wraps). "
            "Round 0 of each stage is right; in round 1 the wait on parity 0 returns True at once "
            "if phase 1 is still pending (stale or half-written stage read by wgmma), or never "
            "returns if phase 1 already completed (phase 2 never comes)."),
    }


def mutate_half_tx_bytes(ptx):
    lines = ptx.split("\n")
    hdr, _ = _loop_bounds(lines)
    hits = [i for i in _find_all(lines, lambda l: "mbarrier.arrive.expect_tx" in l) if i < hdr]
    assert len(hits) >= 1
    i = hits[0]  # prologue, stage 0, k-tile 0
    m = re.search(r"\],\s*(\d+);", lines[i])
    assert m, lines[i]
    full = int(m.group(1))
    assert lines[i].count(f", {full};") == 1
    lines[i] = lines[i].replace(f", {full};", f", {full // 2};")
    return "\n".join(lines), i + 1, {
        "rule": "mbarrier.tx-mismatch",
        "line": i + 1,
        "description": (
            f"The first expect_tx (stage 0, k-tile 0) announces {full // 2} bytes while the TMA "
            f"loads signalling that barrier deliver {full} (A tile 16384 + two B half-tiles of "
            "8192). If the A tile (or both B halves) land first, tx reaches 0 and phase 0 "
            "completes with 16384 bytes still in flight: the consumer's wgmma reads stage 0 "
            "while a TMA write is pending, and the surplus complete_tx carries into phase 1. "
            "If one B half lands, then A, tx goes 16384 -> 8192 -> -8192 -> -16384 and never "
            "equals 0: phase 0 never completes and the consumer hangs (observed on an H200)."),
    }


def mutate_no_full_wait(ptx):
    lines = ptx.split("\n")
    i = _find_one(lines, lambda l: "mbarrier.try_wait.parity" in l, "try_wait.parity")
    # The wait is an inline-asm scope block: { .reg .pred complete; waitLoop: try_wait; @!complete bra.uni waitLoop; }
    start = i
    while lines[start].strip() != "{":
        start -= 1
        assert i - start < 5, "opening brace of the wait block not found"
    end = i
    while lines[end].strip() != "}":
        end += 1
        assert end - i < 5, "closing brace of the wait block not found"
    block = [l.strip() for l in lines[start:end + 1] if l.strip()]
    assert block[1].startswith(".reg .pred") and block[2].endswith(":") and "bra.uni" in block[4], block
    for j in range(start, end + 1):
        if lines[j].strip():
            lines[j] = _removed(lines[j])
    hdr, back = _loop_bounds(lines)
    first_mma = next(j for j in range(i, back) if "wgmma.mma_async" in lines[j])
    return "\n".join(lines), i + 1, {
        "rule": "race.async-pending",
        "line": i + 1,
        "unsafe_line": first_mma + 1,
        "description": (
            "The consumer's try_wait.parity loop on the full barrier (the whole inline-asm block, "
            f"lines {start + 1}-{end + 1}) is removed. The wgmma.mma_async instructions "
            f"(first at line {first_mma + 1}) read the stage's A/B tiles while the TMA loads "
            "into them may still be in flight; no phase of any barrier is ever waited on."),
    }


def mutate_wgmma_wait_too_shallow(ptx):
    lines = ptx.split("\n")
    hdr, back = _loop_bounds(lines)
    hits = [i for i in _find_all(lines, lambda l: "wgmma.wait_group.sync.aligned" in l) if hdr < i < back]
    assert len(hits) == 1, hits
    i = hits[0]
    m = re.match(r"^(\s*wgmma\.wait_group\.sync\.aligned\s+)(\d+)(;\s*)$", lines[i])
    assert m, lines[i]
    depth = int(m.group(2))
    lines[i] = m.group(1) + str(depth + 1) + m.group(3)
    tma = [j for j in range(i, back) if "cp.async.bulk.tensor" in lines[j]]
    assert tma
    return "\n".join(lines), i + 1, {
        "rule": "race.async-pending",
        "line": i + 1,
        "unsafe_line": tma[0] + 1,
        "description": (
            f"The in-loop wgmma.wait_group depth is raised from {depth} to {depth + 1}. With 3 "
            "stages, iteration i refills stage (i+2)%3 == (i-1)%3 right after this wait; at depth "
            f"{depth + 1} the wgmma group of iteration i-1, which reads that stage, may still be "
            f"pending when the TMA load (line {tma[0] + 1}) overwrites it (async WAR)."),
    }


def mutate_no_store_fence(ptx):
    lines = ptx.split("\n")
    i = _find_one(lines, lambda l: "fence.proxy.async" in l, "fence.proxy.async")
    assert lines[i].strip() == "fence.proxy.async.shared::cta;", lines[i]
    lines[i] = _removed(lines[i])
    store = next(j for j in range(i, len(lines)) if "cp.async.bulk.tensor" in lines[j] and ".global.shared::cta" in lines[j])
    return "\n".join(lines), i + 1, {
        "rule": "race.async-proxy",
        "line": i + 1,
        "unsafe_line": store + 1,
        "description": (
            "The fence.proxy.async.shared::cta between the epilogue's generic stmatrix writes of "
            f"the C tile and the TMA store (line {store + 1}) is removed. bar.sync alone does not "
            "order generic-proxy writes before async-proxy reads, so the TMA store may read "
            "stale shared memory."),
    }


MUTATIONS = [
    ("parity_never_flips", mutate_parity_never_flips,
     {"race": "race.async-pending", "mbarrier": "mbarrier.parity", "deadlock": "deadlock"}),
    ("half_tx_bytes", mutate_half_tx_bytes,
     {"race": "race.async-pending", "mbarrier": "mbarrier.tx-mismatch", "deadlock": "deadlock"}),
    ("no_full_wait", mutate_no_full_wait,
     # no phase is ever waited on before the barrier's next arrive.expect_tx (PTX 9.7.13.15.4)
     {"race": "race.async-pending", "mbarrier": "mbarrier.reuse-before-consumption", "deadlock": "ok"}),
    ("wgmma_wait_too_shallow", mutate_wgmma_wait_too_shallow,
     {"race": "race.async-pending", "mbarrier": "ok", "deadlock": "ok"}),
    ("no_store_fence", mutate_no_store_fence,
     {"race": "race.async-proxy", "mbarrier": "ok", "deadlock": "ok"}),
]

# --------------------------------------------------------------------------------------
# The zoo
# --------------------------------------------------------------------------------------


def cdiv(a, b):
    return -(-a // b)


def build(outdir: str) -> None:
    variants = []
    ok = {"race": "ok", "mbarrier": "ok", "deadlock": "ok"}

    def emit(name, ptx):
        path = os.path.join(outdir, name)
        with open(path, "w") as f:
            f.write(ptx)
        ptxas_ok(path)
        return path

    def common(meta, num_warps, num_stages):
        return {"num_warps": num_warps, "num_stages": num_stages,
                "shared_bytes": int(meta.shared),
                "global_scratch_bytes": int(getattr(meta, "global_scratch_size", 0) or 0),
                "profile_scratch_bytes": int(getattr(meta, "profile_scratch_size", 0) or 0)}

    def scratch_args(params, meta, n_user):
        """Triton appends global-scratch and profile-scratch pointers after the user params.
        Both scratch sizes are 0 for these kernels, so the launcher passes null (0)."""
        extra = params[n_user:]
        assert len(extra) == 2, extra
        assert int(getattr(meta, "global_scratch_size", 0) or 0) == 0
        assert int(getattr(meta, "profile_scratch_size", 0) or 0) == 0
        return {p["name"]: 0 for p in extra}, [p["name"] for p in extra]

    # ---- add -------------------------------------------------------------------------
    BLOCK, n = 1024, 3000
    ptx, meta = compile_ptx(add_kernel,
                            {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                             "n_elements": "i32", "BLOCK": "constexpr"},
                            {"BLOCK": BLOCK}, {(0,): DIV16, (1,): DIV16, (2,): DIV16}, 4, 3)
    ptx = normalize_ptx(ptx)
    emit("add.ptx", ptx)
    entry, params = entry_and_params(ptx)
    p = [x["name"] for x in params]
    sargs, snames = scratch_args(params, meta, 4)
    variants.append({
        "file": "add.ptx", "kernel": entry, "correct": True, "source": "generate.py",
        "triton": triton.__version__, **common(meta, 4, 3),
        "params": params,
        "param_roles": {p[0]: "x_ptr", p[1]: "y_ptr", p[2]: "out_ptr", p[3]: "n_elements",
                        **{s: "triton scratch pointer (null)" for s in snames}},
        "launch": {"kernel": entry, "grid": [cdiv(n, BLOCK), 1, 1], "block": [128, 1, 1],
                   "cluster": [1, 1, 1], "shared_bytes": int(meta.shared),
                   "args": {p[3]: n, **sargs},
                   "buffers": {p[0]: {"dtype": "float32", "shape": [n]},
                               p[1]: {"dtype": "float32", "shape": [n]},
                               p[2]: {"dtype": "float32", "shape": [n]}},
                   "tensormaps": {},
                   "outputs": [p[2]]},
        "reference": "ref:add", "expect": dict(ok), "bug": None,
    })

    # ---- matmul (tl.load pointers, masks) --------------------------------------------
    BM, BN, BK = 64, 64, 32
    M, N, K = 200, 144, 160
    ptx, meta = compile_ptx(
        matmul_kernel,
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
         "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
         "stride_cm": "i32", "stride_cn": "constexpr",
         "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"},
        {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK},
        # what the JIT specializes for these values: 16-aligned pointers and every int
        # argument divisible by 16 (N = 144, K = 160, strides K, N, N); M = 200 is not.
        # (Without K % 16 == 0 Triton 3.6 does not pipeline this loop with cp.async.)
        {(0,): DIV16, (1,): DIV16, (2,): DIV16, (4,): DIV16, (5,): DIV16,
         (6,): DIV16, (7,): DIV16, (8,): DIV16},
        4, 3)
    ptx = normalize_ptx(ptx)
    emit("matmul.ptx", ptx)
    entry, params = entry_and_params(ptx)
    p = [x["name"] for x in params]
    sargs, snames = scratch_args(params, meta, 9)
    roles = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
    variants.append({
        "file": "matmul.ptx", "kernel": entry, "correct": True, "source": "generate.py",
        "triton": triton.__version__, **common(meta, 4, 3),
        "block_mnk": [BM, BN, BK],
        "constexpr": {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
        "params": params,
        "param_roles": {**{p[i]: r for i, r in enumerate(roles)},
                        **{s: "triton scratch pointer (null)" for s in snames}},
        "launch": {"kernel": entry, "grid": [cdiv(M, BM) * cdiv(N, BN), 1, 1], "block": [128, 1, 1],
                   "cluster": [1, 1, 1], "shared_bytes": int(meta.shared),
                   "args": {p[3]: M, p[4]: N, p[5]: K, p[6]: K, p[7]: N, p[8]: N, **sargs},
                   "buffers": {p[0]: {"dtype": "float16", "shape": [M, K]},
                               p[1]: {"dtype": "float16", "shape": [K, N]},
                               p[2]: {"dtype": "float32", "shape": [M, N]}},
                   "tensormaps": {},
                   "outputs": [p[2]]},
        "reference": "ref:matmul",
        # No fence.proxy.async between cp.async.wait_group and the wgmma that reads the
        # stage (see NOTES.md). reference/ptx-sync-semantics.md A4.4 says one is required;
        # Triton treats this as correct. Left for the race checker's owners to decide.
        "expect": {"race": "disputed", "mbarrier": "ok", "deadlock": "ok"},
        "expect_note": ("cp.async (generic proxy) -> wgmma.mma_async (async proxy) smem read with "
                        "only cp.async.wait_group + bar.sync, no fence.proxy.async; a strict "
                        "reading of PTX ISA async-proxy rules reports race.async-proxy"),
        "bug": None,
    })

    # ---- tma_matmul (host-side tensor descriptors) -------------------------------------
    BM, BN, BK = 128, 128, 64
    M, N, K = 256, 256, 384
    ptx, meta = compile_ptx(
        tma_matmul_kernel,
        {"a_desc": f"tensordesc<fp16[{BM},{BK}]>", "b_desc": f"tensordesc<fp16[{BK},{BN}]>",
         "c_desc": f"tensordesc<fp16[{BM},{BN}]>", "M": "i32", "N": "i32", "K": "i32",
         "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"},
        {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}, {}, 4, 3)
    ptx = normalize_ptx(ptx)
    emit("tma_matmul.ptx", ptx)
    entry, params = entry_and_params(ptx)
    p = [x["name"] for x in params]
    # Each tensordesc argument expands to: .align 64 .b8 [128] CUtensorMap, shape (2 x i32),
    # strides (2 x i64) -- see triton/backends/nvidia/driver.py make_tensordesc_arg.
    assert [x["type"] for x in params[:15]] == [".align 64 .b8[128]", ".u32", ".u32", ".u64", ".u64"] * 3, params
    tmeta = meta.tensordesc_meta
    assert len(tmeta) == 3
    swz = {0: "none", 1: "32B", 2: "64B", 3: "128B"}
    logical = [("a", [M, K]), ("b", [K, N]), ("c", [M, N])]
    tensormaps, args, roles = {}, {}, {}
    for d, (buf, shape) in enumerate(logical):
        base = 5 * d
        assert params[base]["type"].endswith("[128]"), params[base]
        tm = tmeta[d]
        assert tm["elem_size"] == 2 and not tm["fp4_padded"]
        tensormaps[p[base]] = {"dtype": "float16", "shape": shape, "strides": [shape[1], 1],
                               "box": list(tm["block_size"]), "swizzle": swz[tm["swizzle"]],
                               "elem_type_enum": tm["elem_type"], "padding": "zero",
                               "buffer": buf}
        roles[p[base]] = f"{buf}_desc (CUtensorMap, 128 B)"
        args[p[base + 1]], args[p[base + 2]] = shape
        args[p[base + 3]], args[p[base + 4]] = shape[1], 1
        roles[p[base + 1]], roles[p[base + 2]] = f"{buf}_desc.shape[0]", f"{buf}_desc.shape[1]"
        roles[p[base + 3]], roles[p[base + 4]] = f"{buf}_desc.strides[0]", f"{buf}_desc.strides[1]"
    args[p[15]], args[p[16]], args[p[17]] = M, N, K
    roles[p[15]], roles[p[16]], roles[p[17]] = "M", "N", "K"
    sargs, snames = scratch_args(params, meta, 18)
    args.update(sargs)
    roles.update({s: "triton scratch pointer (null)" for s in snames})
    tma_launch = {"kernel": entry, "grid": [cdiv(M, BM) * cdiv(N, BN), 1, 1], "block": [128, 1, 1],
                  "cluster": [1, 1, 1], "shared_bytes": int(meta.shared),
                  "args": args,
                  "buffers": {"a": {"dtype": "float16", "shape": [M, K]},
                              "b": {"dtype": "float16", "shape": [K, N]},
                              "c": {"dtype": "float16", "shape": [M, N]}},
                  "tensormaps": tensormaps,
                  "outputs": ["c"]}
    tma_common = {"source": "generate.py", "triton": triton.__version__, **common(meta, 4, 3),
                  "block_mnk": [BM, BN, BK], "params": params, "param_roles": roles}
    variants.append({"file": "tma_matmul.ptx", "kernel": entry, "correct": True, **tma_common,
                     "launch": tma_launch, "reference": "ref:tma_matmul", "expect": dict(ok),
                     "bug": None})

    for name, fn, expect in MUTATIONS:
        mptx, line, bug = fn(ptx)
        assert mptx != ptx and mptx.count("\n") == ptx.count("\n")
        fname = f"tma_matmul__{name}.ptx"
        emit(fname, mptx)
        variants.append({"file": fname, "kernel": entry, "correct": False, **tma_common,
                         "mutation_of": "tma_matmul.ptx",
                         "launch": tma_launch, "reference": "ref:tma_matmul",
                         "expect": expect, "bug": bug})

    manifest = {"family": "triton",
                "generator": "tests/zoo/triton/generate.py",
                "target": "sm_90a",
                "note": ("args/buffers are keyed by PTX .param names; for tensor-descriptor kernels "
                         "the backing arrays have no param and are named a/b/c, referenced from "
                         "'tensormaps'. Trailing Triton scratch pointers are passed as 0 (null). "
                         "Tensormap shape/strides/box are in numpy (outermost-first) order, strides "
                         "in elements; the PTX coordinate vector {c0, c1} and CUtensorMap dims are "
                         "innermost-first. 'expect' values: 'ok', the rule id expected from that checker "
                         "family, or 'disputed' (see NOTES.md)."),
                "variants": variants}
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


def main(argv):
    if triton.__version__ != TRITON_VERSION:
        print(f"warning: triton {triton.__version__} installed, zoo pinned to {TRITON_VERSION}",
              file=sys.stderr)
    if shutil.which("ptxas") is None:
        sys.exit("generate.py needs ptxas on PATH to validate the PTX it writes")
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            bad = []
            for name in sorted(os.listdir(tmp)):
                with open(os.path.join(tmp, name)) as a:
                    new = a.read()
                try:
                    with open(os.path.join(HERE, name)) as b:
                        old = b.read()
                except FileNotFoundError:
                    old = None
                if new != old:
                    bad.append(name)
            if bad:
                sys.exit("out of date: " + ", ".join(bad))
            print("zoo/triton is up to date")
        return
    build(HERE)
    print("wrote", ", ".join(sorted(f for f in os.listdir(HERE) if f.endswith((".ptx", ".json")))))


if __name__ == "__main__":
    main(sys.argv[1:])

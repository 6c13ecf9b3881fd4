"""``kverify check`` on production Hopper pipelines: the CuTe TMA/wgmma tutorial and CUTLASS
example 48 (sm90 warp-specialized GEMM), compiled at benchmark time from the pinned
``nvidia-cutlass`` wheel (``pip install -e .[bench]``; PTX cached in
~/.cache/kverify/production, never in the repository), plus our own zoo pipelines.

    python bench/production.py [--only NAME]

One ``kverify check --format json`` process per kernel, pinned to one core where ``taskset``
exists; wall seconds and peak RSS (``wait4``) of that process. The zoo kernels run with their
manifest launches (interpreter + static checks); the CUTLASS kernels take their launch
parameters as one ``Params`` struct, whose bytes are not constructed here, so they get
``--grid/--block`` only: the static obligations (parity, tx bytes, arrivals, the SMT race
check) and the interpreter obligations ``unknown`` for want of buffers. Prints a table and
writes bench/results/production.json. Targets (issue 14): a definite verdict in <= 10 s and
1 GiB.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "production.json"
CACHE = Path.home() / ".cache" / "kverify" / "production"
ZOO = ROOT / "tests" / "zoo"
CUTLASS_PIN = "4.2.0.0"
TIMEOUT_S = 120  # per check; a killed check is a row with verdict "timeout"

#: (name, wheel source path, nvcc -I dirs relative to the wheel source)
CUTLASS = [
    ("cute_wgmma_tma_sm90", "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"),
    ("cutlass_ex48_ws_gemm", "examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu"),
]
ZOO_KERNELS = ["peek_pipeline/peek_pipeline", "peek_pipeline/peek_pipeline__wrong_parity",
               "peek_pipeline/peek_pipeline__missing_wait", "peek_pipeline/peek_pipeline__wait_group_too_shallow",
               "wgmma_pipeline/wgmma_pipeline", "bulk_pipeline/bulk_pipeline", "bulk_pipeline/bulk_pipeline__wrong_parity"]


def cutlass_source() -> Path | None:
    try:
        import cutlass_library
    except ImportError:
        return None
    src = Path(cutlass_library.__file__).parent / "source"
    return src if (src / "include").is_dir() else None


def compile_cutlass(name: str, rel: str, src: Path) -> tuple[Path | None, str]:
    CACHE.mkdir(parents=True, exist_ok=True)
    ptx = CACHE / f"{name}-{CUTLASS_PIN}.ptx"
    if ptx.exists():
        return ptx, "cached"
    cmd = ["nvcc", "-arch=sm_90a", "-lineinfo", "-std=c++17", "-ptx", "--expt-relaxed-constexpr",
           f"-I{src / 'include'}", f"-I{src / 'tools/util/include'}", f"-I{src / 'examples/common'}",
           "-o", str(ptx), str(src / rel)]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, f"nvcc failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    return ptx, f"nvcc {time.perf_counter() - t:.0f} s"


def entries(ptx: Path) -> list[tuple[str, int]]:
    """(kernel, block threads from .maxntid/.reqntid or 128) of every .entry in the PTX."""
    import re
    text = ptx.read_text()
    out = []
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\)\s*((?:\.\w+[^{]*?)*)\{", text, re.S):
        dirs = m.group(3)
        nt = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", dirs)
        threads = 128
        if nt:
            threads = 1
            for g in nt.groups():
                threads *= int(g) if g else 1
        out.append((m.group(1), threads))
    return out


def measured(argv: list[str]) -> dict:
    cmd = [sys.executable, "-m", "kverify", "check", *argv, "--format", "json"]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env, cwd=ROOT)
        timer = threading.Timer(TIMEOUT_S, p.kill)
        timer.start()
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        errf.seek(0)
        err = errf.read()
    dt = time.perf_counter() - t
    return {"rc": os.waitstatus_to_exitcode(status), "out": out.decode(), "err": err.decode(), "seconds": dt,
            "rss_mib": ru.ru_maxrss / 1024}


def summarize(name: str, res: dict, note: str) -> dict:
    row = {"kernel": name, "seconds": round(res["seconds"], 2), "peak_rss_mib": round(res["rss_mib"], 1),
           "exit": res["rc"], "note": note}
    try:
        rep = json.loads(res["out"])
        k = rep["kernels"][0]
        row["verdict"] = k["verdict"]
        row["obligations"] = {o["title"]: (o["status"] + (f" {o['rule']}" if o.get("rule") else ""))
                              for o in k["obligations"]}
        row["unknown_reasons"] = {o["title"]: (o.get("message") or "")[:200]
                                  for o in k["obligations"] if o["status"] == "unknown"}
    except (ValueError, KeyError, IndexError):
        row["verdict"] = "timeout" if res["seconds"] >= TIMEOUT_S else "error"
        row["error"] = (res["err"] or res["out"]).strip().splitlines()[-1:] if (res["err"] or res["out"]) else []
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run only kernels whose name contains this")
    a = ap.parse_args()
    rows = []
    for z in ZOO_KERNELS:
        if a.only and a.only not in z:
            continue
        ptx = ZOO / f"{z}.ptx"
        res = measured([str(ptx.relative_to(ROOT)), "--launch", str((ptx.parent / "manifest.json").relative_to(ROOT))])
        rows.append(summarize(z, res, "zoo, manifest launch"))
    src = cutlass_source()
    for name, rel in CUTLASS:
        if a.only and a.only not in name:
            continue
        if src is None or shutil.which("nvcc") is None:
            rows.append({"kernel": name, "verdict": "not run",
                         "note": "needs nvidia-cutlass==%s (pip install -e .[bench]) and nvcc" % CUTLASS_PIN})
            continue
        ptx, how = compile_cutlass(name, rel, src)
        if ptx is None:
            rows.append({"kernel": name, "verdict": "not run", "note": how})
            continue
        for kern, threads in entries(ptx):
            res = measured([str(ptx), "--kernel", kern, "--grid", "1", "--block", str(threads)])
            rows.append(summarize(f"{name}:{kern[:40]}", res, f"{how}; --grid 1 --block {threads}, no buffers"))
    print(f"{'kernel':58} {'verdict':13} {'s':>6} {'MiB':>6}  obligations (status)")
    for r in rows:
        obs = r.get("obligations", {})
        short = ", ".join(f"{t.replace('mbarrier conformance', 'mbar')}={s}" for t, s in obs.items())
        print(f"{r['kernel'][:58]:58} {r['verdict']:13} {r.get('seconds', float('nan')):6.2f} "
              f"{r.get('peak_rss_mib', float('nan')):6.0f}  {short[:400]}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": f"2-core x86 VM, Python {platform.python_version()}, no GPU; one core "
                                          f"(taskset -c 0) per check",
                               "cutlass": CUTLASS_PIN, "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

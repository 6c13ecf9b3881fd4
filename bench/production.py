"""``kverify check`` on production Hopper pipelines: our own zoo pipelines; the CuTe TMA/wgmma
tutorial compiled at benchmark time from the pinned ``nvidia-cutlass`` wheel (``pip install -e
.[bench]``; PTX cached in ~/.cache/kverify/production, never in the repository); and the CUTLASS
sm90 GEMMs of examples 48 and 49 (warp-specialized cooperative, ping-pong, plain warp-specialized,
non-warp-specialized, stream-K, an epilogue visitor tree) as ``kverify capture`` recorded them on
an H200 (``bench/capture_demo.sh record DIR`` on the GPU machine compiles the examples from the
same wheel; ``--captured DIR``, default ~/.cache/kverify/cap), each with its real ``Params``
bytes and tensor maps, at the sizes the capture ran (example 48 at 256x256x128, 256x256x512 --
the same 8 CTAs, 16 k-tiles instead of 4 -- and 1024x1024x512, 64 CTAs; any further capture
directory holding an example-48 run, such as 2048x1024x512 on 120 persistent CTAs), and the CuTe
tutorial's NT and TN GEMMs at 256x256x512 as the same script captured them. The ``interpreted``
column says which CTAs (or clusters) the run interpreted when CTA or cluster symmetry applied.

    python bench/production.py [--only NAME] [--captured DIR] [--no-mutants]

``--only NAME`` re-records the rows whose label contains NAME and keeps the file's other rows.

Seeded bugs of each captured GEMM are made here, at benchmark time, by editing one line of its
PTX each (``MUTANTS``): the consumer's peek-then-wait on the full barrier names the wrong
parity; the consumer does not wait at all; the mainloop's ``wgmma.wait_group 1`` is gone (the
stage is released while the wgmma reading it may be in flight; visible only when the k-loop
wraps around the stages); the release (empty) barriers expect 2 arrivals more than the
consumers bring (the producer's wait for a released stage never returns).

One ``kverify check --format json`` process per kernel, pinned to one core where ``taskset``
exists; wall seconds and peak RSS (``wait4``) of that process. The tutorial kernels take their
launch parameters as structs: without a capture of them they get ``--grid/--block`` only
(interpreter obligations ``unknown`` for want of buffers). Prints a table and writes
bench/results/production.json. Targets (issue 14): a definite verdict in <= 10 s and 1 GiB.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
TIMEOUT_S = 600  # per check; a killed check is a row with verdict "timeout"
CAPTURED = Path.home() / ".cache" / "kverify" / "cap"
MUTANT_DIR = CACHE / "mutants"

#: (name, wheel source path, nvcc -I dirs relative to the wheel source)
CUTLASS = [
    ("cute_wgmma_tma_sm90", "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"),
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


# --------------------------------------------------------------------------- seeded bugs
_PEEK = re.compile(r"^\s*mbarrier\.try_wait\.parity\.shared::cta\.b64 (\w+), \[(%\w+)\], (%\w+);\s*$")


def _peeks(lines):
    """(peek line, fallback line, match) of every peek-then-wait: a non-blocking try_wait whose
    fallback retry loop waits on the same barrier and phase registers within 30 lines."""
    out = []
    for i, line in enumerate(lines):
        m = _PEEK.match(line)
        if m:
            j = next((j for j in range(i + 1, min(i + 30, len(lines)))
                      if "mbarrier.try_wait.parity" in lines[j] and f"[{m.group(2)}], {m.group(3)}," in lines[j]), None)
            if j is not None:
                out.append((i, j, m))
    return out


def _wrong_parity(lines):
    hits = _peeks(lines)
    for i, j, m in hits:
        for k in (i, j):
            lines[k] = (f".reg .b32 %kvmut{k}; xor.b32 %kvmut{k}, {m.group(3)}, 1; "
                        + lines[k].replace(f"], {m.group(3)}", f"], %kvmut{k}"))
    return [i + 1 for i, _, _ in hits]


def _missing_wait(lines):
    hits = _peeks(lines)
    for i, _, m in hits:
        lines[i] = f"mov.pred {m.group(1)}, 1;"
    return [i + 1 for i, _, _ in hits]


def _missing_wait_group(lines):
    hits = [i for i, line in enumerate(lines) if re.match(r"\s*wgmma\.wait_group\.sync\.aligned [1-9]\d*;", line)]
    for i in hits:
        lines[i] = ""
    return [i + 1 for i in hits]


_INIT = re.compile(r"^\s*mbarrier\.init\.shared(?:::cta)?\.b64 \[%\w+\], (%\w+);\s*$")


def _arrival_count(lines):
    """In each kernel, the first barriers initialized with a count above 1 (the mainloop's empty
    barriers the consumers release: one arrival per consumer warpgroup and multicast source),
    their count (the ``mov`` just before the init) raised by 2."""
    out, done = [], False
    for k, line in enumerate(lines):
        if ".entry " in line:
            done = False
        m = None if done else _INIT.match(line)
        if not m:
            continue
        for i in range(k - 1, max(k - 12, -1), -1):
            mv = re.match(r"^(\s*mov\.u32 )" + re.escape(m.group(1)) + r", (\d+);\s*$", lines[i])
            if mv:
                if int(mv.group(2)) >= 2:
                    lines[i] = f"{mv.group(1)}{m.group(1)}, {int(mv.group(2)) + 2};"
                    out.append(i + 1)
                    done = True
                break
    return out


#: name -> (edit, what it seeds); every edit keeps the line count, so lines stay comparable
MUTANTS = {"wrong_parity": (_wrong_parity, "the consumer's peek-then-wait on the full barrier flips its parity"),
           "missing_wait": (_missing_wait, "the consumer's peek succeeds at once: no wait on the full barrier"),
           "missing_wait_group": (_missing_wait_group, "the mainloop's wgmma.wait_group N>0 removed"),
           "arrival_count": (_arrival_count, "the consumers' release barriers initialized for 2 arrivals more than "
                             "each phase gets")}


def mutate(ptx: Path, name: str) -> tuple[Path | None, list]:
    lines = ptx.read_text().split("\n")
    where = MUTANTS[name][0](lines)
    if not where:
        return None, []
    MUTANT_DIR.mkdir(parents=True, exist_ok=True)
    out = MUTANT_DIR / f"{ptx.parent.name}-{ptx.stem}-{name}.ptx"
    out.write_text("\n".join(lines))
    return out, where


# --------------------------------------------------------------------------- captured launches
_SCHEDULE = (("KernelTmaWarpSpecializedPingpong", "ping-pong"), ("KernelTmaWarpSpecializedCooperative", "cooperative"),
             ("KernelTmaWarpSpecialized", "warp-specialized"), ("MainloopSm90TmaGmmaILi", "TMA, not warp-specialized"))


def schedule_of(kernel: str) -> str:
    name = next((v for k, v in _SCHEDULE if k in kernel), "?")
    stages = re.search(r"MainloopSm90TmaGmma(?:WarpSpecialized)?ILi(\d+)E", kernel)
    if stages:
        name += f", {stages.group(1)} stages"
    if "StreamKScheduler" in kernel:
        name += ", stream-K"
    if "Sm90TreeVisitor" in kernel:
        name += ", EVT epilogue"
    return name


def captured_gemms(root: Path) -> list:
    """(label, ptx, kernel, spec, size) of each distinct CUTLASS GEMM launch ``kverify capture``
    recorded under ``root``/*/index.json."""
    out, seen = [], set()
    for index in sorted(root.glob("*/index.json")):
        idx = json.loads(index.read_text())
        cmd = " ".join(idx.get("command") or [])
        size = "x".join(re.findall(r"--[mnk]=(\d+)", cmd)) or "?"
        example = re.search(r"gemm(\d+)", cmd)
        tutorial = re.search(r"cute_wgmma_tma\s+(\d+)\s+(\d+)\s+(\d+)\s+([NT])\s+([NT])", cmd)
        for launch in idx["launches"]:
            k = launch["kernel"]
            if not (("GemmUniversal" in k or tutorial and "gemm_device" in k) and launch.get("ptx")):
                continue
            if tutorial:
                size = "x".join(tutorial.groups()[:3])
            key = (k, tuple(launch["grid"]), size)
            if key in seen:
                continue
            seen.add(key)
            label = (f"cute_wgmma_tma_sm90 {tutorial.group(4)}{tutorial.group(5)} {size}" if tutorial
                     else f"ex{example.group(1) if example else '?'} {schedule_of(k)} {size}")
            out.append((label, index.parent / launch["ptx"], k, index.parent / launch["spec"], size,
                        launch["grid"], launch["block"], launch["cluster"]))
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
        # CTA / cluster symmetry: which CTAs (or clusters, by their first CTA) the run interpreted
        sym = next((re.search(r"\((CTAs \{[^}]*\}|the clusters starting at CTAs \{[^}]*\}) interpreted",
                              o.get("bound") or "") for o in k["obligations"]
                    if "interpreted, the others are symmetric" in (o.get("bound") or "")), None)
        row["interpreted"] = sym.group(1) if sym else "every CTA"
    except (ValueError, KeyError, IndexError):
        row["verdict"] = "timeout" if res["seconds"] >= TIMEOUT_S else "error"
        row["error"] = (res["err"] or res["out"]).strip().splitlines()[-1:] if (res["err"] or res["out"]) else []
    return row


def first_findings(res: dict, n: int = 3) -> list:
    """The first ``n`` error findings of a check: rule, PTX line, message head."""
    try:
        k = json.loads(res["out"])["kernels"][0]
    except (ValueError, KeyError, IndexError):
        return []
    out = []
    for f in k.get("findings", []):
        if f.get("severity", "error") != "error":
            continue
        locs = f.get("locations") or []
        out.append({"rule": f.get("rule"), "ptx_line": locs[0].get("ptx_line") if locs else None,
                    "message": (f.get("message") or "")[:160]})
        if len(out) == n:
            break
    return out


def _device(root: Path) -> str:
    """The GPU the capture ran on (``capture_demo.sh record`` writes ``device.txt``)."""
    try:
        lines = (root / "device.txt").read_text().splitlines()
        gpu = lines[0].split(":", 1)[1].split("(UUID")[0].strip()
        return gpu + (f" ({lines[2].strip()})" if len(lines) > 2 else "")
    except (OSError, IndexError):
        return "a GPU (device.txt missing)"


def _cpu() -> str:
    try:
        return next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "?"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run only kernels whose name contains this")
    ap.add_argument("--captured", type=Path, default=CAPTURED,
                    help="directory of bench/capture_demo.sh record (default ~/.cache/kverify/cap)")
    ap.add_argument("--no-mutants", action="store_true", help="skip the seeded bugs of the captured GEMMs")
    ap.add_argument("--mutants-of", default="ex48 cooperative, 7 stages 256x256x128;ex48 cooperative, 7 stages "
                    "256x256x512;ex49 ping-pong;ex49 warp-specialized", help="';'-separated label prefixes of the "
                    "captured GEMMs that get seeded bugs (default: example 48 at 256x256x128 and at 256x256x512, "
                    "whose 16 k-tiles wrap around its 7 stages, 49's ping-pong and warp-specialized)")
    ap.add_argument("--no-cute", action="store_true", help="skip the CuTe tutorial (static checks only)")
    a = ap.parse_args()
    rows = []
    for z in ZOO_KERNELS:
        if a.only and a.only not in z:
            continue
        ptx = ZOO / f"{z}.ptx"
        res = measured([str(ptx.relative_to(ROOT)), "--launch", str((ptx.parent / "manifest.json").relative_to(ROOT))])
        rows.append(summarize(z, res, "zoo, manifest launch"))
    for label, ptx, kern, spec, size, grid, block, cluster in (captured_gemms(a.captured)
                                                                if a.captured.is_dir() else []):
        if a.only and a.only not in label:
            continue
        shape = f"grid {'x'.join(map(str, grid))}, block {block[0]}, cluster {'x'.join(map(str, cluster))}"
        res = measured([str(ptx), "--kernel", kern, "--launch", str(spec)])
        rows.append({**summarize(label, res, f"captured on {_device(a.captured)}; {shape}"), "seeded": None})
        if a.no_mutants or not any(label.startswith(p) for p in a.mutants_of.split(";") if p):
            continue
        for mname, (_, what) in MUTANTS.items():
            mptx, where = mutate(ptx, mname)
            if mptx is None:
                continue
            res = measured([str(mptx), "--kernel", kern, "--launch", str(spec)])
            row = summarize(f"{label} [{mname}]", res, f"seeded: {what} (PTX lines {where})")
            row["seeded"] = {"mutant": mname, "lines": where}
            row["findings"] = first_findings(res)
            rows.append(row)
    src = cutlass_source()
    for name, rel in CUTLASS:
        if a.no_cute or any(r["kernel"].startswith(name) for r in rows):  # captured: its real launch
            continue
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
    print(f"{'kernel':58} {'verdict':13} {'s':>6} {'MiB':>6}  {'interpreted':34} obligations (status)")
    for r in rows:
        obs = r.get("obligations", {})
        short = ", ".join(f"{t.replace('mbarrier conformance', 'mbar')}={s}" for t, s in obs.items())
        shown = r.get("interpreted", "").replace("the clusters starting at CTAs", "clusters at")
        print(f"{r['kernel'][:58]:58} {r['verdict']:13} {r.get('seconds', float('nan')):6.2f} "
              f"{r.get('peak_rss_mib', float('nan')):6.0f}  {shown[:34]:34} {short[:300]}")
    if a.only and OUT.exists():  # re-recorded rows replace theirs; the others stay as recorded
        new = {r["kernel"]: r for r in rows}
        kept = json.loads(OUT.read_text()).get("rows", [])
        rows = [new.pop(r["kernel"], r) for r in kept] + list(new.values())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": f"2-core x86 VM ({_cpu()}), Python {platform.python_version()}, no GPU; "
                                          f"one core (taskset -c 0) per check",
                               "cutlass": CUTLASS_PIN, "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

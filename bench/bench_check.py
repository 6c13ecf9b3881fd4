"""``kverify check`` over the kernel zoo: verdict and time per kernel (median and worst), and
how the cost grows with the trip count, the pipeline depth (stages) and the warp count
(consumer warps) of the bulk-copy pipeline (depth and warps rebuilt with nvcc).

    python bench/bench_check.py [--budget N] [--grids-only]

Also the cost at two grid sizes for a few kernels (kernel, grid, CTAs interpreted, seconds,
peak RSS (VmHWM: ru_maxrss would carry the parent's peak across exec); each in a fresh process): with CTA symmetry (kverify/verifier/races/symmetry.py) a
kernel without inter-CTA communication costs about the same at 1024 CTAs as at 4; the
histogram (global atomics) is interpreted in full. Prints tables and writes
bench/results/check.json (bench/results/check_grid.json with --grids-only).
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kverify  # noqa: E402
from kverify.launch import LaunchSpec  # noqa: E402
from kverify.semantics.ir import load_module  # noqa: E402
from kverify.verifier.check import check_kernel  # noqa: E402

ZOO = ROOT / "tests" / "zoo"
OUT = ROOT / "bench" / "results" / "check.json"
kverify.z3_release()  # as the kverify command runs


def one(path, kernel, launch, budget):
    m = load_module(str(path))
    spec = LaunchSpec.from_dict(launch)
    t = time.perf_counter()
    rep = check_kernel(m, m.kernel(kernel), spec, budget=budget, path=str(path))
    return rep, time.perf_counter() - t


GRID_ONE = r"""
import json, re, sys, time
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
path, kernel, launch, budget = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
m = load_module(path)
t = time.perf_counter()
rep = check_kernel(m, m.kernel(kernel), LaunchSpec.from_dict(launch), budget=budget, path=path)
dt = time.perf_counter() - t
bound = next((o.bound for o in rep.obligations if o.id == "memory" or o.title == "memory safety"), "") or ""
g = launch["grid"]
ctas = g[0] * g[1] * g[2]
hit = re.search(r"CTAs \{([^}]*)\} interpreted", bound)
if hit:
    more = re.search(r"\((\d+) in all\)", hit.group(1))
    ctas = int(more.group(1)) if more else len(hit.group(1).split(","))
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"verdict": rep.verdict, "time_s": dt, "ctas_interpreted": ctas,
                  "peak_rss_mib": hwm / 1024}))
"""


def _grid_cases():
    """(name, path, kernel, launch) at a small and a large grid; buffers grow with the grid."""
    def vadd(g):
        n = g * 256 - 24
        return {"kernel": "vadd", "grid": [g, 1, 1], "block": [256, 1, 1], "args": {"n": n},
                "buffers": {k: {"dtype": "float32", "shape": [n]} for k in "abc"}, "outputs": ["c"]}

    def saxpy(g):
        n = g * 128 - 7
        return {"kernel": "saxpy_scalar", "grid": [g, 1, 1], "block": [128, 1, 1], "args": {"n": n, "alpha": 2.5},
                "buffers": {k: {"dtype": "float32", "shape": [n]} for k in "xy"}, "outputs": ["y"]}

    def softmax(g):
        return {"kernel": "softmax", "grid": [g, 1, 1], "block": [256, 1, 1], "args": {"cols": 1000},
                "buffers": {k: {"dtype": "float32", "shape": [g, 1000]} for k in "xy"}, "outputs": ["y"]}

    def histogram(g):
        n = g * 256
        return {"kernel": "histogram", "grid": [g, 1, 1], "block": [256, 1, 1], "args": {"n": n},
                "buffers": {"data": {"dtype": "uint32", "shape": [n]}, "bins": {"dtype": "uint32", "shape": [64]}},
                "outputs": ["bins"]}

    for name, path, fn, grids in (("vadd", ZOO / "vadd" / "vadd.ptx", vadd, (4, 1024)),
                                  ("saxpy_scalar", ZOO / "saxpy_vec" / "saxpy_scalar.ptx", saxpy, (8, 1024)),
                                  ("softmax", ZOO / "softmax" / "softmax.ptx", softmax, (8, 64)),
                                  ("histogram", ZOO / "histogram" / "histogram.ptx", histogram, (4, 64))):
        for g in grids:
            yield name, path, fn(g)


def grid_costs(budget):
    rows = []
    for name, path, launch in _grid_cases():
        out = subprocess.run([sys.executable, "-c", GRID_ONE, str(path), launch["kernel"], json.dumps(launch),
                              json.dumps(budget)], capture_output=True, text=True, check=True,
                             env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"kernel": name, "grid": launch["grid"][0], **r})
    print(f"{'kernel':14} {'grid':>5} {'CTAs interpreted':>17} {'seconds':>8} {'peak RSS MiB':>13}  verdict")
    for r in rows:
        print(f"{r['kernel']:14} {r['grid']:5} {r['ctas_interpreted']:17} {r['time_s']:8.2f} "
              f"{r['peak_rss_mib']:13.0f}  {r['verdict']}")
    return rows


MACHINE = "2-core x86 VM, Python 3.11, no GPU"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=None, help="interpreter runs (default: kverify check's)")
    ap.add_argument("--grids-only", action="store_true", help="only the cost at two grid sizes")
    a = ap.parse_args()
    if a.grids_only:
        rows = grid_costs(a.budget)
        out = OUT.parent / "check_grid.json"
        out.write_text(json.dumps({"machine": f"{MACHINE} ({platform.node()}, python {platform.python_version()})",
                                   "budget": a.budget, "grid_costs": rows}, indent=2) + "\n")
        return 0
    rows = []
    for mf in sorted(ZOO.glob("*/manifest.json")):
        for v in json.loads(mf.read_text())["variants"]:
            path = mf.parent / v["file"].replace(".cu", ".ptx")
            rep, dt = one(path, v["kernel"], v["launch"], a.budget)
            bug = v.get("bug") or {}
            hit = None
            if bug:
                lines = {bug["line"], *bug.get("also_lines", ())}
                hit = any(o.status == "violated" and (o.rule == bug["rule"] or any(
                    f.rule == bug["rule"] and ({l.line for l in f.locations} | {l.ptx_line for l in f.locations})
                    & lines for f in rep.findings)) for o in rep.obligations)
            rows.append({"kernel": f"{mf.parent.name}/{path.name}", "correct": v["correct"], "verdict": rep.verdict,
                         "time_s": dt, "bug_found": hit,
                         "statuses": {o.id: o.status for o in rep.obligations}})
    print(f"{'kernel':52} {'verdict':13} {'time s':>7}  bug found")
    for r in rows:
        print(f"{r['kernel']:52} {r['verdict']:13} {r['time_s']:7.2f}  {'' if r['bug_found'] is None else r['bug_found']}")
    times = [r["time_s"] for r in rows]
    summary = {"kernels": len(rows), "median_s": statistics.median(times), "worst_s": max(times),
               "correct_violated": [r["kernel"] for r in rows if r["correct"] and r["verdict"] == "violated"],
               "correct_verified": sum(1 for r in rows if r["correct"] and r["verdict"] == "verified"),
               "correct_inconclusive": sum(1 for r in rows if r["correct"] and r["verdict"] == "inconclusive"),
               "bugs_found": sum(1 for r in rows if r["bug_found"]),
               "bugs": sum(1 for r in rows if r["bug_found"] is not None)}
    print(f"median {summary['median_s']:.2f} s, worst {summary['worst_s']:.2f} s over {len(rows)} kernels; "
          f"correct: {summary['correct_verified']} verified, {summary['correct_inconclusive']} inconclusive, "
          f"{len(summary['correct_violated'])} violated; seeded bugs found {summary['bugs_found']}/{summary['bugs']}")
    mf = ZOO / "bulk_pipeline" / "manifest.json"
    v = json.loads(mf.read_text())["variants"][0]

    def pipeline(iters, stages=3, consumers=4):
        """bulk_pipeline with ``stages`` ring stages and ``consumers`` consumer warps (built
        with nvcc from the zoo source), checked for ``iters`` iterations."""
        src = (mf.parent / "bulk_pipeline.cu").read_text()
        if (stages, consumers) == (3, 4):
            path = mf.parent / "bulk_pipeline.ptx"
        else:
            for name, val in (("STAGES", stages), ("NUM_CONSUMER_WARPS", consumers), ("PRODUCER_WARP", consumers),
                              ("NUM_THREADS", 32 * (consumers + 1))):
                src = re.sub(rf"#define {name} \d+", f"#define {name} {val}", src)
            d = Path(tempfile.mkdtemp(prefix="kverify-bench-"))
            (d / "bulk_pipeline.cu").write_text(src)
            subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", "bulk_pipeline.ptx",
                            "bulk_pipeline.cu"], cwd=d, check=True)
            path = d / "bulk_pipeline.ptx"
        launch = dict(v["launch"], block=[32 * (consumers + 1), 1, 1], args={"iters": iters},
                      buffers={"in": {"dtype": "float32", "shape": [iters * 256]},
                               "out": {"dtype": "float32", "shape": [iters * 256]}})
        rep, dt = one(path, "bulk_pipeline", launch, a.budget)
        return {"iters": iters, "stages": stages, "consumer_warps": consumers, "time_s": dt, "verdict": rep.verdict}

    growth = {"trip_count": [], "pipeline_depth": [], "warp_count": []}
    for iters in (4, 8, 16, 32, 64):
        growth["trip_count"].append(pipeline(iters))
    if shutil.which("nvcc"):
        for stages in (1, 2, 3, 4, 6, 8):
            growth["pipeline_depth"].append(pipeline(16, stages=stages))
        for consumers in (1, 2, 4, 8):
            growth["warp_count"].append(pipeline(16, consumers=consumers))
    else:
        print("nvcc not on PATH: pipeline depth and warp count are not measured")
    for what, rows_ in growth.items():
        print(f"bulk_pipeline, {what.replace('_', ' ')}: " + ", ".join(
            f"{r['iters']} it/{r['stages']} st/{r['consumer_warps']} w {r['time_s']:.2f} s ({r['verdict']})"
            for r in rows_))
    grids = grid_costs(a.budget)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": f"{MACHINE} ({platform.node()}, python {platform.python_version()})",
                               "budget": a.budget, "summary": summary, "rows": rows,
                               "growth": growth, "grid_costs": grids}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

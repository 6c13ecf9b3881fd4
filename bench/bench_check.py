"""``kverify check`` over the kernel zoo: verdict and time per kernel (median and worst), and
how the cost grows with the trip count, the pipeline depth (stages) and the warp count
(consumer warps) of the bulk-copy pipeline (depth and warps rebuilt with nvcc).

    python bench/bench_check.py [--budget 16]

Prints a table and writes bench/results/check.json.
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

from kverify.launch import LaunchSpec  # noqa: E402
from kverify.semantics.ir import load_module  # noqa: E402
from kverify.verifier.check import check_kernel  # noqa: E402

ZOO = ROOT / "tests" / "zoo"
OUT = ROOT / "bench" / "results" / "check.json"


def one(path, kernel, launch, budget):
    m = load_module(str(path))
    spec = LaunchSpec.from_dict(launch)
    t = time.perf_counter()
    rep = check_kernel(m, m.kernel(kernel), spec, budget=budget, path=str(path))
    return rep, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=16)
    a = ap.parse_args()
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
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": f"{platform.node()}, python {platform.python_version()}",
                               "budget": a.budget, "summary": summary, "rows": rows,
                               "growth": growth}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

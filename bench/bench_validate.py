"""Benchmark of ``kverify validate`` on the GPU, measured in one run on one machine:

* the time to validate one kernel (load + assemble + references + N trials x 2 poisons on
  the GPU in a child process + checks), median of 3, for a few zoo kernels;
* the interpreter-vs-GPU speed ratio per correct zoo kernel: one interpreter run
  (deterministic schedule, race shadow on, as ``kverify run``) against the median GPU launch
  (host-timed launch + synchronize, from the validation's runs).

    python bench/bench_validate.py [--trials 4] [--out bench/results/validate.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TIMED = ["tests/zoo/vadd/vadd.ptx", "tests/zoo/softmax/softmax.ptx", "tests/zoo/triton/tma_matmul.ptx"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "validate.json"))
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import load_module
    from kverify.verifier.validate import validate

    res = {"machine": platform.node(), "cpu": platform.processor() or platform.machine(), "trials": a.trials,
           "validate": [], "speed": []}
    validate(TIMED[0], trials=1)  # warm-up: imports, driver start-up
    for f in TIMED:
        times, runs = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            v = validate(f, trials=a.trials)
            times.append(time.perf_counter() - t0)
            runs.append(v.details["run_wall_s"])
        res["device"] = v.details["device"]
        res["validate"].append({"kernel": f, "verdict": v.report.verdict, "launches": 2 * a.trials,
                                "median_s": round(statistics.median(times), 3),
                                "gpu_worker_median_s": round(statistics.median(runs), 3)})
        print(f"validate {f}: {statistics.median(times):.2f} s ({2 * a.trials} launches; GPU worker "
              f"{statistics.median(runs):.2f} s) -> {v.report.verdict}", flush=True)
    for m in sorted((ROOT / "tests" / "zoo").glob("*/manifest.json")):
        for var in json.loads(m.read_text())["variants"]:
            if not var["correct"]:
                continue
            ptx = str((m.parent / (Path(var["file"]).stem + ".ptx")).relative_to(ROOT))
            mod = load_module(ptx)
            spec = LaunchSpec.from_dict(var["launch"])
            t0 = time.perf_counter()
            r = run_kernel(mod, mod.kernel(var["launch"].get("kernel")), spec)
            ti = time.perf_counter() - t0
            v = validate(ptx, launch=str(m.relative_to(ROOT)), trials=4)
            ms = sorted(v.details["launch_ms"].values())
            gms = statistics.median(ms) if ms else None
            row = {"kernel": ptx, "interp_s": round(ti, 4), "interp_status": r.status,
                   "gpu_launch_ms_median": round(gms, 4) if gms else None,
                   "ratio": round(ti * 1e3 / gms) if gms else None, "threads": spec.threads_per_block *
                   spec.grid[0] * spec.grid[1] * spec.grid[2]}
            res["speed"].append(row)
            print(f"{ptx:55s} interp {ti:8.3f} s  gpu {gms:8.4f} ms  ratio {row['ratio']}", flush=True)
    ratios = [r["ratio"] for r in res["speed"] if r["ratio"]]
    res["ratio_median"] = statistics.median(ratios) if ratios else None
    res["ratio_min"], res["ratio_max"] = (min(ratios), max(ratios)) if ratios else (None, None)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"interpreter/GPU time ratio: median {res['ratio_median']}, range {res['ratio_min']}..{res['ratio_max']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Interpreter throughput on the kernel zoo, and the bulk-copy pipeline at 64 iterations.

For every correct zoo kernel (ours and Triton's) one deterministic run of its manifest
launch: thread-instructions per second (instructions times active lanes) and warp-
instructions per second. Then the bulk-copy pipeline kernel (1 CTA, 5 warps: a producer
and four consumers, 3 stages) at 64 iterations under the seeded random scheduler, five
seeds: median time (target: under 2 s). Prints a table and writes
bench/results/interp_throughput.json.

    python bench/bench_interp.py
"""
from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kverify.launch import LaunchSpec  # noqa: E402
from kverify.semantics.interpreter import run_kernel  # noqa: E402
from kverify.semantics.ir import load_module  # noqa: E402

ZOO = ROOT / "tests" / "zoo"
OUT = ROOT / "bench" / "results" / "interp_throughput.json"


def main() -> int:
    rows = []
    for mf in sorted(ZOO.glob("*/manifest.json")):
        for v in json.loads(mf.read_text())["variants"]:
            if not v["correct"]:
                continue
            path = mf.parent / v["file"].replace(".cu", ".ptx")
            m = load_module(str(path))
            spec = LaunchSpec.from_dict(v["launch"])
            t = time.perf_counter()
            r = run_kernel(m, m.kernel(v["kernel"]), spec)
            dt = time.perf_counter() - t
            rows.append({"kernel": f"{mf.parent.name}/{path.name}", "status": r.status, "time_s": dt,
                         "warp_instructions": r.steps, "thread_instructions": r.thread_steps,
                         "thread_instr_per_s": r.thread_steps / dt})
    print(f"{'kernel':48} {'time s':>8} {'warp-instr':>11} {'thread-instr/s':>15}")
    for r in rows:
        print(f"{r['kernel']:48} {r['time_s']:8.2f} {r['warp_instructions']:11d} {r['thread_instr_per_s']:15,.0f}")
    tot_t = sum(r["time_s"] for r in rows)
    tot_i = sum(r["thread_instructions"] for r in rows)
    med = statistics.median(r["thread_instr_per_s"] for r in rows)
    print(f"zoo total: {tot_i:,} thread-instructions in {tot_t:.1f} s = {tot_i / tot_t:,.0f}/s; "
          f"median per kernel {med:,.0f}/s")

    mf = ZOO / "bulk_pipeline" / "manifest.json"
    v = json.loads(mf.read_text())["variants"][0]
    launch = dict(v["launch"], args={"iters": 64},
                  buffers={"in": {"dtype": "float32", "shape": [64 * 256]},
                           "out": {"dtype": "float32", "shape": [64 * 256]}})
    m = load_module(str(mf.parent / "bulk_pipeline.ptx"))
    spec = LaunchSpec.from_dict(launch)
    times = []
    for seed in range(5):
        t = time.perf_counter()
        r = run_kernel(m, m.kernel(), spec, schedule="random", seed=seed)
        times.append(time.perf_counter() - t)
        assert r.status == "complete" and not r.findings, (r.status, [f.rule for f in r.findings])
    pipe = {"iterations": 64, "warps": 5, "schedule": "random", "seeds": 5,
            "median_s": statistics.median(times), "times_s": times, "target_s": 2.0}
    print(f"bulk_pipeline, 64 iterations, random scheduler: median {pipe['median_s']:.2f} s over 5 seeds "
          f"(target < 2 s)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                                          f"python {platform.python_version()}",
                               "zoo": rows, "zoo_thread_instr_per_s": tot_i / tot_t,
                               "zoo_median_thread_instr_per_s": med, "bulk_pipeline_64": pipe}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

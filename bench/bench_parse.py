"""PTX front-end throughput: parse + structure every .ptx of tests/zoo (ours and Triton's).

Each run parses every file once with ``parse_ptx`` (lexing, parsing, assembly, CFG
structuring, induction variables, blocking waits) after clearing the front end's memo
tables, so a run starts as cold as a fresh process (only the compiled grammar and regexes
are kept). The fast path and the pure-lark path (``ptx.FASTPATH = False``) are measured
in the same process, runs interleaved. Prints a table and writes
bench/results/parse_throughput.json.

    taskset -c 0 python bench/bench_parse.py [--runs 5]

(the script pins itself to one core with ``os.sched_setaffinity`` when it can).
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

from kverify.semantics.ir import ptx  # noqa: E402

ZOO = ROOT / "tests" / "zoo"
OUT = ROOT / "bench" / "results" / "parse_throughput.json"


def _pin_one_core() -> str:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > 1:
            os.sched_setaffinity(0, {cpus[0]})
        return f"pinned to cpu {sorted(os.sched_getaffinity(0))}"
    except (AttributeError, OSError):
        return "not pinned"


def _run(texts, fast: bool) -> float:
    ptx.FASTPATH = fast
    ptx._clear_caches()
    t0 = time.perf_counter()
    for path, text in texts:
        ptx.parse_ptx(text, path)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    pin = _pin_one_core()

    files = sorted(ZOO.rglob("*.ptx"))
    texts = [(str(p), p.read_text()) for p in files]
    lines = sum(t.count("\n") + (not t.endswith("\n")) for _, t in texts)
    triton = sum(1 for p in files if "triton" in p.parts)

    # first parse of the process: builds the lark grammar and the fast-path regexes
    t0 = time.perf_counter()
    ptx.parse_ptx(texts[0][1], texts[0][0])
    startup = time.perf_counter() - t0

    times = {True: [], False: []}
    for _ in range(args.runs):
        for fast in (True, False):
            times[fast].append(_run(texts, fast))
    ptx.FASTPATH = True

    med = {k: statistics.median(v) for k, v in times.items()}
    machine = {
        "processor": platform.processor() or platform.machine(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": pin,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }
    result = {
        "files": len(files),
        "triton_files": triton,
        "lines": lines,
        "runs": args.runs,
        "startup_s": round(startup, 4),
        "fast": {"median_s": round(med[True], 4), "runs_s": [round(x, 4) for x in times[True]],
                 "lines_per_s": round(lines / med[True])},
        "pure_lark": {"median_s": round(med[False], 4), "runs_s": [round(x, 4) for x in times[False]],
                      "lines_per_s": round(lines / med[False])},
        "speedup_fast_over_pure": round(med[False] / med[True], 2),
        "machine": machine,
    }

    print(f"machine: {machine['processor']}, {machine['cpu_count']} cpus ({pin}), "
          f"Python {machine['python']} ({machine['implementation']})")
    print(f"corpus:  {len(files)} files ({triton} Triton), {lines} lines; "
          f"median of {args.runs} runs; startup (grammar build) {startup:.3f} s")
    print()
    print(f"{'path':<12}{'files':>7}{'lines':>8}{'median s':>11}{'lines/s':>10}")
    for name, k in (("fast", True), ("pure lark", False)):
        print(f"{name:<12}{len(files):>7}{lines:>8}{med[k]:>11.3f}{lines / med[k]:>10.0f}")
    print(f"\nfast / pure lark: {result['speedup_fast_over_pure']:.2f}x faster")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``kverify check`` cold and through the check server (``kverify serve``), on the same zoo kernels,
alternating, on this machine's CPU.

    python bench/served.py [--every N] [--rounds R] [--out FILE]

Each zoo variant (every N-th, default all) is checked R times (default 2) each way, the order of
the two alternating from round to round; one untimed check of each way comes first (bytecode in
place, the server started). Prints a table and writes bench/results/served.json: per kernel the
seconds of each run and both verdicts (which must agree), and the medians of the per-kernel medians.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("side_by_side", ROOT / "bench" / "sanitizer_side_by_side.py")
side_by_side = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(side_by_side)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "served.json"))
    a = ap.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed software runs (see side_by_side)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kverify")], capture_output=True)
    variants = list(side_by_side.variants())[::a.every]
    server, sock = side_by_side.start_server()
    if server is None:
        print(f"the check server did not start: {sock}")
        return 2
    first = variants[0]
    for s in (None, sock):
        side_by_side.kverify_check(first[2], first[0], server=s)
    rows = {str(p.relative_to(ROOT)): {"cold": [], "served": []} for _, _, p in variants}
    print(f"{'kernel':60} {'cold s':>7} {'served s':>9}  verdict")
    try:
        for r in range(a.rounds):
            for m, _, p in variants:
                row = rows[str(p.relative_to(ROOT))]
                for mode in (("cold", "served") if r % 2 == 0 else ("served", "cold")):
                    res = side_by_side.kverify_check(p, m, server=sock if mode == "served" else None)
                    row[mode].append(res["s"])
                    row[mode + "_verdict"] = [res["verdict"], res["rules"]]
                if server.poll() is not None:  # a served row would have been a cold one
                    print(f"the check server stopped: {server.stderr.read()[-500:]}")
                    return 2
                if r == a.rounds - 1:
                    print(f"{str(p.relative_to(ROOT))[-60:]:60} {statistics.median(row['cold']):7.2f} "
                          f"{statistics.median(row['served']):9.2f}  {row['cold_verdict'][0]}", flush=True)
    finally:
        server.terminate()
        server.wait()
    cold = statistics.median(statistics.median(v["cold"]) for v in rows.values())
    served = statistics.median(statistics.median(v["served"]) for v in rows.values())
    summary = {"kernels": len(rows), "rounds": a.rounds, "median_cold_s": round(cold, 3),
               "median_served_s": round(served, 3), "ratio": round(cold / served, 2),
               "verdicts_differ": sum(v["cold_verdict"] != v["served_verdict"] for v in rows.values())}
    machine = {"host": platform.node(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
               "cpu": side_by_side._cpu_model()}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"machine": machine, "summary": summary, "kernels": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    return 0 if summary["verdicts_differ"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

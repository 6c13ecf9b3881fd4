"""The whole zoo's ``kverify check`` verdicts on a machine kept busy by other processes, compared
with the verdict snapshot (tests/snapshot/verdicts.json, collected on a quiet machine).

    python bench/verdicts_under_load.py [--burners N]

Starts ``N`` CPU-bound processes (default: one per core), collects every zoo variant's ``check``
obligations (id, status, rule, line), exit code and verdict exactly as the snapshot does
(``tests/snapshot/collect.py``), stops the burners, and compares. Budgets are solver resource units
and interpreter steps, never wall-clock seconds, so nothing may differ. Prints the counts and
writes bench/results/verdicts_under_load.json (the machine, the load average seen, the variants
that differ with both sides).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "verdicts_under_load.json"
sys.path.insert(0, str(ROOT / "tests" / "snapshot"))


def _burn(stop):
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x * 31 + i) % 1_000_003


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    import collect  # tests/snapshot/collect.py: the snapshot's own collection

    want = json.loads((ROOT / "tests" / "snapshot" / "verdicts.json").read_text())["check"]
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    t0 = time.perf_counter()
    loads = []
    try:
        os.chdir(ROOT)
        got = collect.check_entries()
        loads.append(os.getloadavg()[0])
    finally:
        stop.set()
        for b in burners:
            b.join(5)
    wall = time.perf_counter() - t0
    differ = {k: {"snapshot": want.get(k), "under_load": got.get(k)} for k in sorted(set(want) | set(got))
              if want.get(k) != got.get(k)}
    doc = {"machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
           "burners": args.burners, "load_average_1min_at_end": round(loads[-1], 2) if loads else None,
           "variants": len(got), "identical": len(got) - len(differ), "differ": differ, "wall_s": round(wall, 1)}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{'variants':>10} {'identical':>10} {'differ':>7} {'burners':>8} {'load':>6} {'wall s':>8}")
    print(f"{len(got):>10} {len(got) - len(differ):>10} {len(differ):>7} {args.burners:>8} "
          f"{doc['load_average_1min_at_end']:>6} {wall:>8.1f}")
    for k in differ:
        print("differs:", k)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

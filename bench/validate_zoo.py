"""Validate every correct zoo kernel on the GPU (``kverify validate`` through its Python
API) and save one line per kernel: verdict, obligations that did not pass, time.

    python bench/validate_zoo.py [--trials N] [--out bench/results/validate_zoo.json] [--lowered]
                                 [--ref-kind numpy|torch]

``--ref-kind torch`` validates against each family's PyTorch reference (``torch_<name>``
beside the manifest's numpy ``<name>`` in ref.py) instead of the numpy one.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def variants():
    for m in sorted((ROOT / "tests" / "zoo").glob("*/manifest.json")):
        for v in json.loads(m.read_text())["variants"]:
            yield m, v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "validate_zoo.json"))
    ap.add_argument("--lowered", action="store_true")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--buggy", action="store_true", help="the seeded-bug variants instead of the correct ones")
    ap.add_argument("--ref-kind", choices=("numpy", "torch"), default="numpy",
                    help="the manifest's numpy reference, or its PyTorch twin torch_<name>")
    a = ap.parse_args(argv)
    from kverify.verifier.validate import validate

    meta = {"ref_kind": a.ref_kind}
    if a.ref_kind == "torch":
        import torch

        meta["torch"] = torch.__version__

    rows = []
    for m, v in variants():
        if v["correct"] == a.buggy:
            continue
        ptx = m.parent / (Path(v["file"]).stem + ".ptx")
        if a.only and ptx.name not in a.only:
            continue
        t0 = time.perf_counter()
        ref = v.get("reference")
        if a.ref_kind == "torch" and ref:
            mod, _, fn = ref.partition(":")
            ref = f"{mod}:torch_{fn}"
        try:
            r = validate(str(ptx.relative_to(ROOT)), launch=str(m.relative_to(ROOT)), ref=ref, trials=a.trials,
                         lowered=a.lowered, timeout=20.0)
            rep = r.report
            row = {"kernel": str(ptx.relative_to(ROOT)), "reference": ref, "verdict": rep.verdict,
                   "not_passed": [{"id": o.id, "status": o.status, "rule": o.rule, "message": o.message}
                                  for o in rep.obligations if o.status not in ("proved", "bounded")],
                   "device": (r.details.get("device") or {}).get("name"), "time_s": round(time.perf_counter() - t0, 2),
                   "launch_ms_median": sorted(r.details["launch_ms"].values())[len(r.details["launch_ms"]) // 2]
                   if r.details.get("launch_ms") else None}
        except Exception as e:  # keep going: one kernel's failure is a row
            row = {"kernel": str(ptx.relative_to(ROOT)), "verdict": "error", "error": f"{type(e).__name__}: {e}",
                   "time_s": round(time.perf_counter() - t0, 2)}
        rows.append(row)
        print(f"{row['verdict']:12} {row['time_s']:6.2f}s {row['kernel']} "
              f"{'; '.join(o['id'] + ': ' + o['message'][:160] for o in row.get('not_passed', [])) or row.get('error', '')}",
              flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"trials": a.trials, "lowered": a.lowered, **meta, "kernels": rows}, indent=1))
    bad = [r for r in rows if r["verdict"] != ("verified" if not a.buggy else "violated")]
    print(f"{len(rows) - len(bad)} of {len(rows)} as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``kverify check`` (every checker: SMT races, static mbarrier, the interpreter) gives the same
verdicts, statuses, rules and lines on a quiet machine and while other processes keep every
core busy: budgets are solver resource units and interpreter steps, never wall-clock seconds
(the --time-budget backstop is far above these kernels' run time)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "zoo"
SAMPLE = [("reduce_smem", "reduce_smem.cu"), ("reduce_smem", "reduce_smem__missing_sync.cu"),
          ("bulk_pipeline", "bulk_pipeline.cu"), ("bulk_pipeline", "bulk_pipeline__wrong_parity.cu"),
          ("warp_specialized", "warp_specialized.cu"), ("tma_tensor_load", "tma_tensor_load.cu"),
          ("named_barrier", "named_barrier.cu"), ("work_steal", "work_steal_slot.cu"),
          ("peek_pipeline", "peek_pipeline.cu"), ("histogram", "histogram__missing_sync.cu")]


def _verdicts():
    out = {}
    for fam, src in SAMPLE:
        mf = json.loads((ZOO / fam / "manifest.json").read_text())
        v = next(v for v in mf["variants"] if v["file"] == src)
        ptx = ZOO / fam / src.replace(".cu", ".ptx")
        r = subprocess.run([sys.executable, "-m", "kverify", "check", str(ptx), "--kernel", v["kernel"],
                            "--launch", json.dumps(v["launch"]), "--format", "json"], cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
        k = json.loads(r.stdout)["kernels"][0]
        out[src] = (r.returncode, k["verdict"],
                    [(o["title"], o["status"], o.get("rule"),
                      [(loc.get("path"), loc.get("line")) for loc in o.get("locations", [])]) for o in k["obligations"]])
    return out


@pytest.mark.slow
def test_check_verdicts_do_not_change_under_cpu_load():
    quiet = _verdicts()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        loaded = _verdicts()
    finally:
        for p in burners:
            p.kill()
    assert loaded == quiet
    assert quiet["reduce_smem.cu"][:2] == (0, "verified")
    assert quiet["reduce_smem__missing_sync.cu"][:2] == (1, "violated")

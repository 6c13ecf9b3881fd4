"""The verdict snapshot: ``kverify check --format json`` over every zoo variant (obligation id,
status, rule, first source line), ``kverify run`` findings (rule ids) over the same launches,
and ``kverify equiv`` verdicts over ``tests/zoo/equivalence.json``. The snapshot pins behaviour:
``tests/test_snapshot.py`` compares a fresh collection with ``verdicts.json`` beside this file,
which may change only in a commit that says why.

    python tests/snapshot/collect.py            # rewrite verdicts.json (under PYTHONHASHSEED=0)
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's kverify, whatever is installed
ZOO = ROOT / "tests" / "zoo"
OUT = Path(__file__).resolve().parent / "verdicts.json"


def _cli(argv) -> tuple[int, str]:
    from kverify.verifier.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        rc = main(argv)
    return rc, buf.getvalue()


def _variants():
    for mf in sorted(ZOO.glob("*/manifest.json")):
        for v in json.loads(mf.read_text())["variants"]:
            path = mf.parent / v["file"].replace(".cu", ".ptx")
            yield mf, path, v


def check_entries():
    out = {}
    for mf, path, v in _variants():
        rel = path.relative_to(ROOT).as_posix()
        rc, text = _cli(["check", rel, "--kernel", v["kernel"], "--launch", json.dumps(v["launch"]),
                         "--format", "json"])
        rep = json.loads(text)
        k = rep["kernels"][0]
        out[rel] = {"exit": rc, "verdict": k["verdict"],
                    "obligations": sorted(
                        [o["id"], o["status"], o["rule"], (o["locations"][0]["line"] if o["locations"] else None)]
                        for o in k["obligations"])}
    return out


def run_entries():
    out = {}
    for mf, path, v in _variants():
        rel = path.relative_to(ROOT).as_posix()
        rc, text = _cli(["run", rel, "--kernel", v["kernel"], "--launch", json.dumps(v["launch"]),
                         "--format", "json"])
        rep = json.loads(text)
        out[rel] = {"exit": rc, "status": rep["status"], "robust": rep["robust"],
                    "rules": sorted({f["rule"] for f in rep["findings"]})}
    return out


def torch_pairs() -> set:
    """Names of the pairs whose reference is a PyTorch function: collected only where torch is
    installed (an optional extra), so the snapshot test compares them only there."""
    pairs = json.loads((ZOO / "equivalence.json").read_text())["pairs"]
    return {p["name"] for p in pairs if p["reference"].startswith("torch:")}


def equiv_entries():
    from kverify.verifier.equivalence import equivalence_report
    import importlib.util
    import tempfile

    pairs = json.loads((ZOO / "equivalence.json").read_text())["pairs"]
    if importlib.util.find_spec("torch") is None:
        pairs = [p for p in pairs if not p["reference"].startswith("torch:")]
    out = {}
    with tempfile.TemporaryDirectory() as cex:
        for p in pairs:
            torch_ref = p["reference"].startswith("torch:")  # torch:MODULE:FN, MODULE relative to the zoo
            ref = "torch:" + str(ZOO / p["reference"][6:]) if torch_ref else str(ZOO / p["reference"])
            _, results = equivalence_report(str(ZOO / p["candidate"]), ref, launch=p["launch"],
                                             ref_launch=None if torch_ref else p.get("ref_launch", p["launch"]),
                                             model=p["model"], cex_dir=cex, test_examples=2, bind=p.get("bind"))
            r = results[0][1]
            out[p["name"]] = {"verdict": r.verdict, "expect": p["expect"]}
    return out


def collect(parts=("check", "run", "equiv")) -> dict:
    fns = {"check": check_entries, "run": run_entries, "equiv": equiv_entries}
    return {p: fns[p]() for p in parts}


def in_fresh_process(parts) -> dict:
    """``collect(parts)`` in a fresh interpreter with ``PYTHONHASHSEED=0``, as the ``kverify``
    command runs (``kverify.__main__``): the order Python iterates a set in decides the order
    z3 numbers terms in, and with it whether a budgeted query ends unknown, so a collection in a
    process that did other work first, or under another hash seed, may differ."""
    import os
    import subprocess

    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--stdout", *parts], cwd=ROOT,
                       env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    import os

    args = sys.argv[1:]
    if os.environ.get("PYTHONHASHSEED") != "0":  # the seed the kverify command runs with
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    os.chdir(ROOT)
    parts = tuple(a for a in args if not a.startswith("--")) or ("check", "run", "equiv")
    got = collect(parts)
    if "--stdout" in args:
        print(json.dumps(got))
    else:
        OUT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT}")

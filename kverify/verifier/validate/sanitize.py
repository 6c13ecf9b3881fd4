"""``--sanitize``: the first run of the plan under NVIDIA compute-sanitizer, once per tool
(``memcheck``, ``racecheck``, ``synccheck``), findings folded into the report as rules
``sanitizer.memcheck``, ``sanitizer.racecheck``, ``sanitizer.synccheck``.

racecheck sees shared-memory hazards only (global-memory races are out of its scope:
``kverify check`` covers those symbolically).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .runner import ROOT, _env, worker_command

TOOLS = ("memcheck", "racecheck", "synccheck")
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error", re.I)
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazard", re.I)


def find_sanitizer() -> str | None:
    for cand in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer",
                 "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if cand and Path(cand).is_file():
            return cand
    hits = sorted(Path("/usr/local").glob("cuda*/bin/compute-sanitizer"))
    return str(hits[-1]) if hits else None


def parse(tool: str, text: str) -> tuple[int | None, list]:
    """``(errors, messages)`` from compute-sanitizer's output (``None`` when it printed no
    summary: it did not run to completion)."""
    n = None
    m = _SUMMARY.search(text)
    if m:
        n = int(m.group(1))
    if tool == "racecheck":
        r = _RACE_SUMMARY.search(text)
        if r:
            n = max(n or 0, int(r.group(1)))
    msgs = []
    for line in text.splitlines():
        s = line.strip("= ").strip()
        if not line.startswith("=========") or not s:
            continue
        if re.match(r"(Invalid|Race|Error|Barrier|Uninitialized|Out of bounds|Potential|Warning|Program hit)", s) \
                or "hazard" in s.lower() and "SUMMARY" not in s:
            msgs.append(s)
    return n, msgs[:12]


def run_tool(tool: str, plan_path: str, timeout: float, sanitizer: str) -> dict:
    cmd = [sanitizer, "--tool", tool, "--print-limit", "20"]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "all"]
    cmd += worker_command(plan_path)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), env=_env(),
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "status": "timeout", "errors": None, "messages": [f"no result within {timeout:g} s"]}
    text = r.stdout + "\n" + r.stderr
    n, msgs = parse(tool, text)
    status = "ok" if n == 0 else ("findings" if n else "no-summary")
    return {"tool": tool, "status": status, "errors": n, "messages": msgs,
            "tail": "\n".join(text.strip().splitlines()[-8:]) if status == "no-summary" else ""}

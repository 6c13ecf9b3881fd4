"""Executing a validation plan: on the GPU in a child process with a timeout
(``SubprocessRunner``), or on kverify's interpreter (``InterpreterRunner``, for machines
without a GPU and for the CPU tests of the validator's logic).

A runner returns ``RunOutcome``: the device description (or why there is none), and per
run id its status (``done``, ``error``, ``timeout``, ``not-run``), the path of its output
``.npz``, the red-zone counts and the launch time.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]  # the directory holding the kverify package: the worker's PYTHONPATH


@dataclass
class RunOutcome:
    device: dict | None = None
    unavailable: str | None = None
    runs: dict = field(default_factory=dict)  # id -> {"status", "ms", "redzone", "message"}
    stderr: str = ""
    wall_s: float = 0.0


def worker_command(plan_path: str) -> list:
    return [sys.executable, "-m", "kverify.verifier.validate.worker", plan_path]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class SubprocessRunner:
    """Runs the plan in ``python -m verifier.validate.worker`` (or ``command``), in its own
    process group. A run that has not finished ``timeout`` seconds after it started (or a
    worker silent for ``timeout + startup`` seconds before its first launch) is a hang: the
    whole group is killed and the run is reported ``timeout``."""

    def __init__(self, timeout: float = 30.0, startup: float = 60.0, command=None, prefix=()):
        self.timeout, self.startup = float(timeout), float(startup)
        self.command = command or worker_command
        self.prefix = list(prefix)

    def __call__(self, plan: dict, plan_path: str) -> RunOutcome:
        out = RunOutcome()
        t0 = time.perf_counter()
        proc = subprocess.Popen(self.prefix + self.command(plan_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=str(ROOT), env=_env(),
                                start_new_session=True)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current = None
        deadline = time.monotonic() + self.timeout + self.startup
        buf = b""
        lines_other = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill(proc)
                    if current is not None:
                        out.runs[current] = {"status": "timeout",
                                             "message": f"no completion within {self.timeout:g} s"}
                    else:
                        out.runs["<startup>"] = {"status": "timeout",
                                                 "message": f"the worker did not start a launch within "
                                                            f"{self.timeout + self.startup:g} s"}
                    break
                ready = sel.select(timeout=min(left, 0.5))
                if not ready:
                    if proc.poll() is not None and not buf:
                        rest = proc.stdout.read()
                        if not rest:
                            break
                        buf += rest
                    else:
                        continue
                else:
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        lines_other.append(line.decode(errors="replace"))
                        continue
                    kind = ev.get("event")
                    if kind == "device":
                        out.device = {k: v for k, v in ev.items() if k != "event"}
                    elif kind == "unavailable":
                        out.unavailable = ev.get("reason", "no GPU")
                    elif kind == "start":
                        current = ev["run"]
                        deadline = time.monotonic() + self.timeout
                    elif kind == "done":
                        out.runs[ev["run"]] = {"status": "done", "ms": ev.get("ms"), "redzone": ev.get("redzone", {}),
                                               "pointers": ev.get("pointers", {})}
                        current = None
                        deadline = time.monotonic() + self.timeout + self.startup
                    elif kind == "error":
                        out.runs[ev.get("run") or "<load>"] = {"status": "error", "message": ev.get("message"),
                                                                "name": ev.get("name")}
                        current = None
        finally:
            sel.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill(proc)
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            out.stderr = "\n".join(lines_other) + err
            for s in (proc.stdout, proc.stderr):
                if s:
                    s.close()
        if not out.device and not out.unavailable and not out.runs:
            tail = out.stderr.strip().splitlines()[-3:]
            out.unavailable = "the GPU worker exited without reporting a device" + \
                (f": {' | '.join(tail)}" if tail else "")
        out.wall_s = time.perf_counter() - t0
        return out

    @staticmethod
    def _kill(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class InterpreterRunner:
    """Runs each run of the plan on kverify's CPU interpreter (deterministic schedule).
    Red zones are not modelled; an out-of-bounds access the interpreter reports
    (rule ``bounds``) counts as a red-zone hit, a deadlock as an error."""

    def __init__(self, module, kernel, max_steps: int = 20_000_000):
        self.module, self.kernel, self.max_steps = module, kernel, max_steps

    def __call__(self, plan: dict, plan_path: str) -> RunOutcome:
        from kverify.launch import LaunchSpec
        from kverify.semantics.interpreter import run_kernel

        out = RunOutcome(device={"name": "kverify interpreter (CPU)"})
        t0 = time.perf_counter()
        for run in plan["runs"]:
            spec = LaunchSpec.from_dict(run["launch"])
            data = dict(np.load(run["npz"]))
            t1 = time.perf_counter()
            r = run_kernel(self.module, self.kernel, spec, inputs=data, max_steps=self.max_steps)
            ms = (time.perf_counter() - t1) * 1e3
            if r.status == "deadlock":
                out.runs[run["id"]] = {"status": "timeout", "message": f"deadlock on the interpreter: {r.reason}"}
                break
            if r.status != "complete":
                out.runs[run["id"]] = {"status": "error", "message": f"interpreter: {r.status}: {r.reason}"}
                break
            res = {k: r.outputs[k] for k in data if k in r.outputs}
            np.savez(run["out"], **res)
            oob = sum(f.count for f in r.findings if f.rule == "bounds")
            out.runs[run["id"]] = {"status": "done", "ms": ms, "redzone": {k: oob for k in data} if oob else {}}
        out.wall_s = time.perf_counter() - t0
        return out

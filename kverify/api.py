"""The Python API: ``kverify.check``, ``kverify.run`` and ``kverify.equiv`` on a kernel file or PTX
text with a launch given as Python values, and the ``Report`` they return.

    import torch, kverify
    x = torch.randn(3000); y = torch.randn(3000); out = torch.empty(3000)
    rep = kverify.check("add.ptx", grid=3, block=128, args=(x, y, out, 3000))
    rep.verdict, rep.ok, rep.obligations, rep.findings, rep.to_json(), rep.to_sarif(); print(rep)

``args`` gives one value per kernel parameter, in order (or a dict keyed by parameter name — the
CUDA name where the source is known, else the PTX ``.param`` name — or position):

  * a CPU torch tensor or a numpy array: a buffer of its dtype and shape whose initial contents
    are the tensor's (the interpreter runs on them, every schedule on the same ones);
  * ``kverify.Tensor(shape, dtype)``: a buffer of that shape and dtype with seeded random contents;
  * a Python (or numpy) scalar: the parameter's value; ``None``: a null pointer (0).

Errors in what is passed are ``KernelError`` (``file:line:col: message``), as on the command line.
Nothing here imports triton or torch; ``kverify.triton`` does, when used.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from kverify.semantics.ir import KernelError

from kverify.launch.args import Tensor, bind, buffer_of  # noqa: F401 - part of the API

SOURCE_SUFFIXES = (".ptx", ".cu", ".cuh", ".kvir")


class Report:
    """What ``check``/``equiv`` found: per kernel a ``KernelReport`` (``kernels``), and over all of
    them the ``verdict`` (verified | violated | inconclusive | error), ``obligations``,
    ``findings``, ``ok`` (verdict is verified), ``exit_code`` (the command line's), ``to_json()``
    (the ``kverify.report/2`` document ``--format json`` prints), ``to_sarif()`` (SARIF 2.1.0), and
    ``str()`` — the text ``kverify check`` prints."""

    def __init__(self, kernels, command: str = "check", inputs: dict | None = None):
        self.kernels = list(kernels)
        self.command = command
        self.inputs = inputs  # the initial buffer contents the interpreter ran on (given ones)

    @property
    def verdict(self) -> str:
        from kverify.verifier.report import report_json

        return report_json(self.kernels, self.command)["verdict"]

    @property
    def ok(self) -> bool:
        return self.verdict == "verified"

    @property
    def exit_code(self) -> int:
        from kverify.verifier.report import exit_code

        return exit_code(self.kernels)

    @property
    def obligations(self) -> list:
        return [o for k in self.kernels for o in k.obligations]

    @property
    def findings(self) -> list:
        return [f for k in self.kernels for f in k.findings]

    def obligation(self, oid: str):
        """The obligation with dotted id ``oid`` (``race.shared``, ``deadlock``, ...)."""
        for o in self.obligations:
            if o.id == oid:
                return o
        raise KeyError(f"no obligation {oid!r} (have {', '.join(o.id for o in self.obligations)})")

    def to_json(self) -> dict:
        from kverify.verifier.report import report_json

        return report_json(self.kernels, self.command)

    def to_sarif(self) -> dict:
        from kverify import __version__
        from kverify.verifier.sarif import sarif

        return sarif(self.kernels, __version__)

    def __str__(self) -> str:
        from kverify.verifier.text import check_text

        return check_text(self.kernels)

    def __repr__(self) -> str:
        names = ", ".join(k.name for k in self.kernels)
        return f"<kverify.Report {self.command} {names}: {self.verdict}>"


# --------------------------------------------------------------------------- kernels


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = Path(base) / "kverify" / "ptx"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        d = Path(tempfile.gettempdir()) / "kverify-ptx"
        d.mkdir(parents=True, exist_ok=True)
    return d


def kernel_file(kernel, stem: str = "kernel") -> str:
    """The path of ``kernel``: a path as given, or PTX text written once to the cache
    (``~/.cache/kverify/ptx/<stem>-<hash>.ptx``) so that counterexamples can be replayed."""
    if isinstance(kernel, os.PathLike):
        return os.fspath(kernel)
    if not isinstance(kernel, str):
        raise KernelError(f"kernel must be a path or PTX text, got {type(kernel).__name__}", "<api>", 1, 1)
    if "\n" not in kernel and (kernel.endswith(SOURCE_SUFFIXES) or os.path.exists(kernel)):
        return kernel
    if ".entry" not in kernel and ".version" not in kernel:
        raise KernelError(f"kernel {kernel[:60]!r} is neither a file ({', '.join(SOURCE_SUFFIXES)}) nor PTX text",
                          "<api>", 1, 1)
    h = hashlib.sha256(kernel.encode()).hexdigest()[:16]
    p = _cache_dir() / f"{stem}-{h}.ptx"
    if not p.exists():
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(kernel)
        os.replace(tmp, p)
    return str(p)


def load(kernel, kernel_name: str | None = None, arch: str = "sm_90a", defines: dict | None = None):
    """``(module, kernel IR, path)`` of ``kernel`` (a path or PTX text); ``kernel_name`` picks
    the ``.entry`` (default: the only one)."""
    from kverify.semantics.ir import load_module

    path = kernel_file(kernel)
    opts = {"arch": arch, "defines": defines or {}} if path.endswith((".cu", ".cuh")) else {}
    m = load_module(path, **opts)
    entries = [k for k in m.kernels if k.is_entry]
    if kernel_name is not None:
        try:
            k = m.kernel(kernel_name)
        except KeyError:
            raise KernelError(f"no kernel {kernel_name!r} (entries: {', '.join(k.name for k in entries)})",
                              path, 0, 0) from None
    elif len(entries) == 1:
        k = entries[0]
    else:
        raise KernelError(f"{len(entries)} kernels in the file: give kernel_name= (one of "
                          f"{', '.join(k.name for k in entries)})", path, 0, 0)
    return m, k, path


# --------------------------------------------------------------------------- launches


def launch_spec(kernel, grid=None, block=None, args=(), cluster=None, dynamic_smem: int = 0, path: str = "<api>",
                launch=None):
    """``(LaunchSpec, inputs)`` for ``kernel``: from ``launch`` (a launch JSON path, zoo manifest,
    or dict) or from ``grid``/``block``/``args``/``cluster``/``dynamic_smem``."""
    from kverify.launch import LaunchSpec, resolve

    if launch is not None:
        if grid is not None or block is not None or args:
            raise KernelError("give either launch= or grid=/block=/args=, not both", "<api>", 1, 1)
        return resolve(launch, path, kernel.name).spec, None
    if block is None:
        if kernel.block_dim is None:
            raise KernelError(f"no block size for {kernel.name}: give block= (or .reqntid / __launch_bounds__ "
                              f"in the kernel)", path, 0, 0)
        block = list(kernel.block_dim)
    scalars, buffers, inputs = bind(kernel, args, path)
    d = {"kernel": kernel.name, "grid": _dims(grid), "block": _dims(block), "cluster": _dims(cluster),
         "args": scalars, "buffers": buffers, "dynamic_smem": int(dynamic_smem or 0)}
    return LaunchSpec.from_dict(d, "<api>"), inputs or None


def _dims(v):
    if v is None:
        return None
    if isinstance(v, int):
        return [v]
    return [int(x) for x in v]


# --------------------------------------------------------------------------- entry points


def check(kernel, grid=None, block=None, args=(), cluster=None, dynamic_smem: int = 0, kernel_name: str | None = None,
          assume=None, *, launch=None, inputs: dict | None = None, budget: int | None = None, timeout: float = 10.0,
          smt: bool = True, arch: str = "sm_90a", defines: dict | None = None, strict: bool = False,
          extern=None) -> Report:
    """Check ``kernel`` (a ``.ptx``/``.cu``/``.kvir`` path or PTX text) for one launch: every
    obligation of ``kverify check``. ``grid`` left out runs one CTA and keeps the SMT proofs
    symbolic in the grid (as on the command line). ``inputs`` (buffer name -> array) override
    the contents taken from ``args``. ``budget``/``timeout``/``smt`` are ``check``'s
    ``--budget``/``--timeout``/``--no-smt``. ``assume`` (a condition or a list, Python syntax over
    parameter names: ``"n > 0 and n % 4 == 0"``; ``kverify.symbolic.assume``) is ``--assume``:
    preconditions of the symbolic checkers over the parameters left symbolic; the launch's
    concrete arguments must satisfy it (else a ``KernelError``). ``strict`` is ``--strict``:
    warning-tier findings make the kernel violated. ``extern`` is ``--extern-summary``: summaries of
    body-less functions the kernel calls, ``{"nondet": "pure"}`` or ``["nondet=pure"]`` (``"*"`` for
    every one; ``kverify.symbolic.extern``); an unknown name or kind is a ``KernelError``. A launch with ``"dependent"`` (a PDL pair) checks
    both grids: the report has the primary's kernel report, then the dependent's."""
    from kverify.verifier.check import check_kernel, check_pair

    m, k, path = load(kernel, kernel_name, arch, defines)
    spec, given = launch_spec(k, grid, block, args, cluster, dynamic_smem, path, launch)
    if inputs:
        given = {**(given or {}), **inputs}
    assume = [assume] if isinstance(assume, str) else list(assume or ())
    kw = dict(budget=budget, timeout_s=timeout, smt=smt, path=path, inputs=given, assume=assume, strict=strict,
              extern=extern or ())
    if spec.dependent is not None:
        name = spec.dependent["kernel"]
        try:
            dk = m.kernel(name)
        except KeyError:
            raise KernelError(f"launch spec: dependent.kernel: no kernel {name!r} (entries: "
                              f"{', '.join(x.name for x in m.kernels if x.is_entry)})", spec.path, 1, 1) from None
        return Report([replay_with_inputs(r, given) for r in check_pair(m, k, spec, dk, **kw)], "check", given)
    rep = check_kernel(m, k, spec, **kw)
    return Report([replay_with_inputs(rep, given)], "check", given)


def replay_with_inputs(rep, inputs):
    """``rep`` with ``--inputs FILE.npz`` added to every replay command when the run used given
    buffer contents (written once to the cache), so that the replay runs on the same data."""
    if not inputs:
        return rep
    import io

    import numpy as np

    from kverify.launch.args import to_numpy

    buf = io.BytesIO()
    np.savez(buf, **{k: to_numpy(v) for k, v in inputs.items()})
    data = buf.getvalue()
    p = _cache_dir() / f"inputs-{hashlib.sha256(data).hexdigest()[:16]}.npz"
    if not p.exists():
        p.write_bytes(data)
    from kverify.verifier.report import replay_with_inputs_file

    return replay_with_inputs_file(rep, p)


def run(kernel, grid=None, block=None, args=(), cluster=None, dynamic_smem: int = 0, kernel_name: str | None = None,
        *, launch=None, inputs: dict | None = None, schedule: str = "deterministic", seed: int = 0,
        budget: int | None = None, arch: str = "sm_90a", defines: dict | None = None):
    """Run ``kernel`` on the interpreter (``kverify run``): a ``RunResult`` with ``status``,
    ``findings`` and ``outputs`` (buffer name -> numpy array)."""
    from kverify.semantics.interpreter import run_kernel

    m, k, path = load(kernel, kernel_name, arch, defines)
    spec, given = launch_spec(k, grid, block, args, cluster, dynamic_smem, path, launch)
    if inputs:
        given = {**(given or {}), **inputs}
    return run_kernel(m, k, spec, inputs=given, schedule=schedule, seed=seed, budget=budget)


def equiv(candidate, reference, grid=None, block=None, args=(), cluster=None, dynamic_smem: int = 0, *,
          launch=None, ref_launch=None, kernel_name: str | None = None, ref_kernel_name: str | None = None,
          fp: str = "real", timeout: float = 60.0, tests: int = 8, seed: int = 0, cex_dir: str | None = None,
          bind: dict | None = None, all_sizes: str | None = None) -> Report:
    """``kverify equiv``: is ``candidate`` equivalent to ``reference`` (paths or PTX text) for the
    launch (``launch=``, or ``grid``/``block``/``args`` applied to both; tensors give shapes and
    dtypes, their contents are not used: the proof is over all inputs). ``all_sizes``: as
    ``--all-sizes`` (``""`` for the default precondition; the launch must be a template).

    ``reference`` may be a PyTorch function (a callable, or ``"torch:MODULE:FN"``): its parameters
    take the candidate's buffers and scalar arguments of the same name (or the kernel parameter
    ``bind`` maps them to: ``{"x": "0"}`` by position, ``{"x": "x_ptr"}`` by name), and it returns
    the one output tensor or a dict ``{buffer: tensor}`` (docs/equivalence.md)."""
    from kverify.verifier.equivalence import equivalence_report
    from kverify.verifier.equivalence.torchref import is_torch_ref

    if is_torch_ref(reference):
        cand = kernel_file(candidate, "candidate")
        if ref_launch is not None or ref_kernel_name is not None:
            raise KernelError("ref_launch= / ref_kernel_name= have no meaning for a torch reference", "<api>", 1, 1)
        if launch is None and (grid is not None or block is not None or args):
            _, k, _ = load(cand, kernel_name)
            spec, _ = launch_spec(k, grid, block, args, cluster, dynamic_smem, cand)
            launch = spec.to_dict()
        rep, _ = equivalence_report(cand, reference, launch=launch, model=fp, timeout_s=timeout, kernel=kernel_name,
                                    cex_dir=cex_dir, test_examples=tests, seed=seed, bind=bind)
        return Report([rep], "equiv")
    cand, ref = kernel_file(candidate, "candidate"), kernel_file(reference, "reference")
    if launch is None and (grid is not None or block is not None or args):
        _, k, _ = load(cand, kernel_name)
        spec, _ = launch_spec(k, grid, block, args, cluster, dynamic_smem, cand)
        launch = spec.to_dict()
        if ref_launch is None:
            _, rk, _ = load(ref, ref_kernel_name)
            rspec, _ = launch_spec(rk, grid, block, args, cluster, dynamic_smem, ref)
            ref_launch = rspec.to_dict()
    rep, _ = equivalence_report(cand, ref, launch=launch, ref_launch=ref_launch, model=fp, timeout_s=timeout,
                                kernel=kernel_name, ref_kernel=ref_kernel_name, cex_dir=cex_dir, test_examples=tests,
                                seed=seed, all_sizes=all_sizes)
    return Report([rep], "equiv")

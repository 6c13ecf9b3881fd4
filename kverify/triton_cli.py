"""``kverify check --triton FILE.py:KERNEL --grid X[,Y,Z] --arg NAME=VALUE|SHAPE:DTYPE ...``: a
Triton kernel checked from the shell. FILE.py is imported (as a module named after it; code under
``if __name__ == "__main__"`` does not run), KERNEL is its ``@triton.jit`` function, and every
parameter is given by name: ``n=100`` (an integer or float; a constexpr or a compile option
such as ``num_warps=8`` alike) or ``x=4x100:fp32`` (a tensor of that shape and dtype with random
contents). Then ``kverify.triton.check`` runs as from Python."""
from __future__ import annotations

import importlib.util
import re
import sys
import os
from pathlib import Path

from kverify.semantics.ir import KernelError

WHERE = "<command line>"


def _value(name: str, text: str):
    from kverify.launch.args import Tensor
    from kverify.launch.resolve import arg_value

    if ":" in text:
        shape, _, dtype = text.rpartition(":")
        if not re.fullmatch(r"\d+(x\d+)*", shape):  # (digits anywhere were dimensions: 4.5x100 was 4x5x100)
            raise KernelError(f"--arg {name}: a tensor is SHAPE:DTYPE such as 4x100:fp32 (SHAPE: N or AxB...), "
                              f"got {text!r}", WHERE, 1, 1)
        return Tensor(tuple(int(d) for d in shape.split("x")), dtype)
    return arg_value(f"{name}={text}")[1]


def load_kernel(spec: str):
    """The ``@triton.jit`` function named by ``FILE.py:KERNEL``."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise KernelError(f"--triton expects FILE.py:KERNEL, got {spec!r}", WHERE, 1, 1)
    if not os.path.isfile(path):
        raise KernelError("no such file", path, 0, 0)
    mod_name = "_kverify_triton_" + re.sub(r"\W", "_", Path(path).stem)
    loader = importlib.util.spec_from_file_location(mod_name, path)
    mod = importlib.util.module_from_spec(loader)
    sys.modules[mod_name] = mod
    try:
        loader.loader.exec_module(mod)
    except Exception as e:  # user code
        raise KernelError(f"importing it failed: {type(e).__name__}: {e}", path, 0, 0) from None
    fn = getattr(mod, name, None)
    if fn is None or not hasattr(fn, "arg_names"):
        found = sorted(k for k, v in vars(mod).items() if hasattr(v, "arg_names") and hasattr(v, "fn"))
        raise KernelError(f"no @triton.jit function {name!r} (found: {', '.join(found) or 'none'})", path, 0, 0)
    return fn


def check_triton(args) -> list:
    """The ``KernelReport`` of each ``FILE.py:KERNEL`` of ``args.files`` for ``kverify check``."""
    import kverify.triton as kt
    from kverify.launch.resolve import dims

    given = {}
    for item in args.arg or ():
        name, eq, text = item.partition("=")
        if not eq:
            raise KernelError(f"--arg expects NAME=VALUE or NAME=SHAPE:DTYPE, got {item!r}", WHERE, 1, 1)
        given[name] = _value(name, text)
    if not args.grid:
        raise KernelError("--triton needs --grid X[,Y,Z]", WHERE, 1, 1)
    grid = tuple(dims(args.grid, "--grid", WHERE))
    reports = []
    for spec in args.files:
        fn = load_kernel(spec)
        params = [p.name for p in fn.params]
        missing = [p.name for p in fn.params if p.name not in given and not p.has_default]
        if missing:
            raise KernelError(f"{fn.fn.__name__}: no --arg for {', '.join(missing)} (parameters: {', '.join(params)})",
                              WHERE, 1, 1)
        kw = dict(given)
        rep = kt.check(fn, grid, budget=args.budget, timeout=args.timeout, smt=not args.no_smt, **kw)
        reports.extend(rep.kernels)
    return reports

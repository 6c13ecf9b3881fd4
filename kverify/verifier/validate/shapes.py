"""Shape fuzzing (B4 of docs/validation.md): the launches a validation runs.

A launch spec may be a *template* (``kverify.launch.resolve``): any integer in ``grid``,
``block``, ``cluster``, ``args``, a buffer's or tensor map's ``shape``/``box``/``strides`` or
``dynamic_smem`` may be an expression over named symbols, with their default values under
``"symbols"`` and, optionally, the values to try under ``"fuzz"``::

    {"kernel": "vadd", "symbols": {"n": 1000}, "fuzz": {"n": [1, 255, 256, 257, 997]},
     "grid": ["ceildiv(n, 256)", 1, 1], "block": [256, 1, 1], "args": {"n": "n"},
     "buffers": {"a": {"dtype": "float32", "shape": ["n"]}, ...}, "outputs": ["c"]}

Expressions: integers, symbols, ``+ - * // %``, ``ceildiv(a, b)``, ``min``, ``max``.
Without ``"fuzz"`` each symbol is tried at its default, at 1, one below and one above the
default, and at a prime near a third of it (one symbol varied at a time).

A concrete launch (no symbols) runs as given, unless ``--shapes NAME=V1,V2`` names one of
its integer arguments: then, for each value, the argument, every buffer or tensor-map
dimension equal to the argument's old value, and every grid dimension that equals
``ceildiv(old, block_dim * 2^j)`` (j = 0..4) are rewritten. The labels of the launches say
what was changed; a template states the relation exactly and is the better choice.
"""
from __future__ import annotations

import copy
import itertools

from kverify.launch import instantiate
from kverify.semantics.ir import KernelError


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while any(n % p == 0 for p in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def default_fuzz(v: int) -> list:
    vals = [v, 1, v - 1, v + 1, _next_prime(max(v // 3, 2))]
    out = []
    for x in vals:
        if x >= 1 and x not in out:
            out.append(x)
    return out


def parse_shapes(items) -> dict:
    """``["n=1,7,33", "m=4"]`` -> ``{"n": [1, 7, 33], "m": [4]}``."""
    out = {}
    for item in items or ():
        for part in item.split(";"):
            name, eq, vals = part.partition("=")
            if not eq or not name.strip():
                raise KernelError(f"--shapes expects NAME=V1,V2,..., got {part!r}", "<command line>", 1, 1)
            try:
                out[name.strip()] = [int(x) for x in vals.split(",") if x.strip()]
            except ValueError:
                raise KernelError(f"--shapes {part!r}: values must be integers", "<command line>", 1, 1) from None
    return out


def launches(template: dict, shapes: dict | None = None) -> list[tuple[str, dict]]:
    """``[(label, concrete launch dict), ...]``; the first is the launch as given (the
    template at its defaults)."""
    shapes = shapes or {}
    symbols = template.get("symbols") or {}
    if symbols:
        unknown = set(shapes) - set(symbols)
        if unknown:
            raise KernelError(f"--shapes names {', '.join(sorted(unknown))}, which the launch template does "
                              f"not declare (symbols: {', '.join(symbols)})", "<command line>", 1, 1)
        fuzz = dict(template.get("fuzz") or {})
        fuzz.update(shapes)
        out = [("defaults " + _label(symbols), instantiate(template, {}))]
        for s, v in symbols.items():
            for x in fuzz.get(s, default_fuzz(int(v))):
                if x == v:
                    continue
                out.append((f"{s}={x}", instantiate(template, {s: x})))
        return out
    base = instantiate(template, {})
    out = [("as given", base)]
    for name, vals in shapes.items():
        args = base.get("args") or {}
        if name not in args or not isinstance(args[name], int):
            raise KernelError(f"--shapes {name}: not an integer argument of the launch (arguments: "
                              f"{', '.join(args) or 'none'}); give a launch template with symbols instead",
                              "<command line>", 1, 1)
        for x in vals:
            if x == args[name]:
                continue
            out.append(_substitute(base, name, args[name], x))
    return out


def _label(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _substitute(base: dict, name: str, old: int, new: int) -> tuple[str, dict]:
    d = copy.deepcopy(base)
    changed = [f"{name}={new}"]
    d["args"][name] = new
    for sect in ("buffers", "tensormaps"):
        for bname, b in (d.get(sect) or {}).items():
            if isinstance(b.get("shape"), list) and old in b["shape"]:
                b["shape"] = [new if s == old else s for s in b["shape"]]
                changed.append(f"{bname}.shape")
    grid = list(d.get("grid") or [1, 1, 1])
    block = list(d.get("block") or [1, 1, 1]) + [1, 1]
    for i, g in enumerate(grid):
        if g <= 1:
            continue
        for j in range(5):
            c = block[i] * (1 << j)
            if -(-old // c) == g:
                grid[i] = max(-(-new // c), 1)
                changed.append(f"grid[{i}]=ceildiv({name},{c})")
                break
    d["grid"] = grid
    return ", ".join(changed), d


def product_count(shapes: dict) -> int:
    return len(list(itertools.product(*shapes.values()))) if shapes else 1

"""The one launch resolver: from what a user passes to a ``LaunchSpec``.

A launch comes as a launch JSON file, a zoo ``manifest.json`` (the variant whose file has
the stem of the kernel file; the kernel name breaks ties), inline JSON text, a dict, or
``--grid/--block/--arg`` (or a GPUVerify test header, or the kernel's ``.reqntid``). With
none given, the ``manifest.json`` next to the kernel file is used. A launch without a grid
runs one CTA and is marked ``grid_assumed``: a proof over it is symbolic in the grid (or says
the grid it assumed), never a proof for one CTA presented as one for every grid.

Any of them may be a *template*: an integer in ``grid``, ``block``, ``cluster``,
``dynamic_smem``, ``args`` or a buffer's or tensor map's ``shape``/``box``/``strides`` may be
an expression over the launch's integer ``args`` and its ``symbols`` (defaults of named
sizes; ``fuzz`` lists values to try, see ``verifier.validate.shapes``)::

    {"grid": ["cdiv(n, 256)", 1, 1], "block": [256, 1, 1], "args": {"n": 300},
     "buffers": {"in": {"dtype": "float32", "shape": ["n"]}}}

Expressions: integers, names, ``+ - * // %``, unary minus, ``cdiv``/``ceildiv``, ``min``,
``max``. Bad input is a ``KernelError`` at ``file:line:col`` (exit 2 in the CLI).
"""
from __future__ import annotations

import ast
import copy
import json
import re
from dataclasses import dataclass, replace
import os
from pathlib import Path

from kverify.semantics.ir import KernelError
from kverify.semantics.ir.gpuverify import header_lines

from . import schema
from .spec import LaunchSpec

REQUIRED = "--launch SPEC is required (a launch JSON or a zoo manifest.json)"
_FUNCS = {"ceildiv": lambda a, b: -(-a // b), "cdiv": lambda a, b: -(-a // b), "min": min, "max": max}


@dataclass(frozen=True)
class Source:
    """A launch as read: its (possibly template) dict, where it came from (a path, or
    ``<launch>`` for a dict or inline JSON) and the zoo manifest's reference, if any."""

    data: dict
    path: str
    reference: str | None = None


@dataclass(frozen=True)
class Resolved:
    spec: LaunchSpec
    path: str
    reference: str | None = None


# --------------------------------------------------------------------------- reading



def _entry_at(kernel, file) -> tuple:
    """(line, col) of the kernel's ``.entry`` in ``file`` when ``file`` is the PTX it was read
    from, else (0, 0): a whole-file error names the entry it is about."""
    loc = getattr(kernel, "loc", None)
    if loc is not None and loc.line and str(file).endswith(".ptx"):
        return loc.line, loc.col or 1
    return 0, 0

def manifest_next_to(file: str | None) -> str | None:
    """The zoo ``manifest.json`` next to ``file``, if there is one."""
    if file and os.path.isfile(Path(file).parent / "manifest.json"):
        return str(Path(file).parent / "manifest.json")
    return None


def load(launch, file: str | None = None, kernel: str | None = None, required: str = REQUIRED) -> Source:
    """The launch dict for ``file`` from ``launch`` (a dict, inline JSON text, a launch JSON
    path or a zoo manifest path); with no ``launch``, the manifest next to ``file``."""
    if isinstance(launch, dict):
        path, d = "<launch>", launch
    else:
        launch = launch or manifest_next_to(file)
        if not launch:
            raise KernelError(required, file, 0, 0)
        if launch.lstrip().startswith("{"):  # the spec itself (what check's replay commands carry)
            path, text = "<launch>", launch
        else:
            path = launch
            try:
                text = Path(launch).read_text()
            except OSError as e:
                raise KernelError(f"cannot read launch spec: {e.strerror}", launch, 0, 0) from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise KernelError(f"launch spec: {e.msg}", path, e.lineno, e.colno) from None
    ref = None
    if isinstance(d, dict) and "variants" in d:
        d, ref = _variant(d, file, kernel, path)
    if not isinstance(d, dict):
        raise KernelError("launch spec: expected a JSON object", path, 1, 1)
    return Source(d, path, ref)


def _variant(manifest: dict, file, kernel, path):
    stem = Path(file or "").stem
    match = [v for v in manifest["variants"] if Path(v["file"]).stem == stem]
    if len(match) > 1 and kernel:
        match = [v for v in match if (v.get("kernel") or (v.get("launch") or {}).get("kernel")) == kernel] or match
    if not match:
        raise KernelError(f"manifest has no variant for {Path(file or '').name}", path, 1, 1)
    return match[0]["launch"], match[0].get("reference")


def is_manifest(launch) -> bool:
    """True when ``launch`` names a zoo manifest (a JSON file with ``variants``)."""
    if not launch or isinstance(launch, dict):
        return False
    try:
        return "variants" in json.loads(Path(launch).read_text())
    except (OSError, json.JSONDecodeError, TypeError):
        return False


# --------------------------------------------------------------------------- templates


def evaluate(expr, env: dict, where: str = "launch", path: str = "<launch>"):
    """Value of a number or an expression string over ``env``."""
    if isinstance(expr, bool) or not isinstance(expr, str):
        return expr
    if len(expr) > 1000:
        raise KernelError(f"launch template: expression longer than 1000 characters ({where})", path, 1, 1)
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise KernelError(f"launch template: cannot parse expression {expr!r} ({where})", path, 1, 1) from None

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise KernelError(f"launch template: unknown symbol {n.id!r} in {expr!r} ({where})", path, 1, 1)
            return env[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}
            f = ops.get(type(n.op))
            if f:
                try:
                    return f()
                except ZeroDivisionError:
                    raise KernelError(f"launch template: division by zero in {expr!r} ({where})", path, 1, 1) \
                        from None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FUNCS and not n.keywords:
            xs = [ev(x) for x in n.args]
            try:
                return _FUNCS[n.func.id](*xs)
            except (TypeError, ValueError, ZeroDivisionError):
                raise KernelError(f"launch template: {n.func.id} takes two numbers in {expr!r} ({where})", path,
                                  1, 1) from None
        raise KernelError(f"launch template: unsupported expression {expr!r} ({where})", path, 1, 1)

    try:
        v = ev(tree)
    except (RecursionError, OverflowError, TypeError, ValueError):
        raise KernelError(f"launch template: cannot evaluate {expr[:80]!r} ({where})", path, 1, 1) from None
    if isinstance(v, int) and abs(v) > 1 << 64:
        raise KernelError(f"launch template: {expr[:80]!r} is out of range ({where})", path, 1, 1)
    return int(v) if isinstance(v, float) and v.is_integer() else v


def instantiate(template: dict, values: dict | None = None, path: str = "<launch>") -> dict:
    """A concrete launch dict: ``values`` override the template's ``symbols`` (or, for other
    names, its ``args``), and every expression is evaluated over the symbols and the
    integer args (args given as expressions are evaluated in order and join them)."""
    if not isinstance(template, dict):
        return template  # the schema (``LaunchSpec.from_dict``) rejects it
    d = copy.deepcopy({k: v for k, v in template.items() if k not in ("symbols", "fuzz")})
    symbols = template.get("symbols") or {}
    if not isinstance(symbols, dict):
        raise KernelError(f"launch spec: symbols: expected an object, got {symbols!r}"[:200], path, 1, 1)
    symbols = dict(symbols)
    if not isinstance(d.get("args") or {}, dict):
        return d  # the schema rejects it, naming the key
    args = dict(d.get("args") or {})
    for k, v in (values or {}).items():
        (symbols if k in symbols else args)[k] = v
    env = {k: v for k, v in args.items() if isinstance(v, int)}
    env.update(symbols)
    for k, v in args.items():
        if isinstance(v, str):
            args[k] = env[k] = evaluate(v, env, f"args.{k}", path)
    if "args" in d or args:
        d["args"] = args

    def one(x, keys):
        if isinstance(x, str) and x.strip().isidentifier() and x.strip() not in env and x.strip() not in _FUNCS:
            # a word that names nothing: a value of the wrong type, not an expression
            nonneg = keys[0] in ("dynamic_smem", "shared_bytes") or any(k in ("shape", "strides") for k in keys)
            raise KernelError(f"launch spec: {schema._keypath(keys)}: expected "
                              f"{'a non-negative' if nonneg else 'a positive'} integer, got {schema._show(x)} "
                              f"(not an expression over the args and symbols)", path, *schema.locate(path, keys))
        return evaluate(x, env, schema._keypath(keys), path)

    def each(v, keys):
        if isinstance(v, list):
            return [one(x, [*keys, i]) for i, x in enumerate(v)]
        return one(v, keys)

    for key in ("grid", "block", "cluster", "dynamic_smem", "shared_bytes"):
        if key in d:
            d[key] = each(d[key], [key])
    for sect in ("buffers", "tensormaps"):
        if not isinstance(d.get(sect) or {}, dict):
            continue
        for name, b in (d.get(sect) or {}).items():
            for fld in ("shape", "box", "strides", "lower_corner", "upper_corner", "element_strides",
                        "channels_per_pixel", "pixels_per_column"):
                if isinstance(b, dict) and fld in b:
                    b[fld] = each(b[fld], [sect, name, fld])
    return d


# --------------------------------------------------------------------------- command-line flags


def dims(text: str | None, what: str, path: str) -> list:
    """``"4,2"`` / ``"[4, 2, 1]"`` -> ``[4, 2]``: 1 to 3 positive integers."""
    ok = re.fullmatch(r"\s*\[?\s*\d+(\s*[,x]\s*\d+){0,2}\s*\]?\s*", text or "")  # not -1, 4.5 or 1e3
    vals = [int(x) for x in re.findall(r"\d+", text or "")] if ok else []
    if not 1 <= len(vals) <= 3 or not all(vals):
        raise KernelError(f"{what} must be 1 to 3 positive integers, got {text!r}", path, 1, 1)
    return vals


def gpuverify_defines(path: str) -> list:
    """``NAME[=VALUE]`` of every ``-DNAME[=VALUE]`` on a GPUVerify test header's line 2 (the
    test's preprocessor definitions, e.g. ``//--blockDim=256 --gridDim=2 -DWIDTH=256``)."""
    lines = header_lines(path)
    return re.findall(r"(?:^|\s)-D(\w+(?:=\S+)?)", lines[1]) if lines else []


def gpuverify_header(path: str):
    """``(block, grid)`` from a GPUVerify test header (line 1 ``//pass`` or ``//xfail:...``,
    line 2 ``//--blockDim=X --gridDim=Y`` with ``X``/``Y`` a number or ``[x,y,z]``), else None."""
    lines = header_lines(path)
    if lines is None:
        return None
    b = re.search(r"--blockDim=(\[[^\]]*\]|\d+)", lines[1])
    g = re.search(r"--gridDim=(\[[^\]]*\]|\d+)", lines[1])
    if not b or not g:
        return None
    return dims(b.group(1), "--blockDim", path), dims(g.group(1), "--gridDim", path)


def arg_value(item: str):
    """``NAME=VALUE`` of ``--arg`` -> ``(name, int or float)``."""
    name, eq, v = item.partition("=")
    if not eq:
        raise KernelError(f"--arg expects NAME=VALUE, got {item!r}", "<command line>", 1, 1)
    try:
        return name, float(v) if any(c in v for c in ".eE") and not v.startswith("0x") else int(v, 0)
    except ValueError:
        raise KernelError(f"--arg {name}: not a number: {v!r}", "<command line>", 1, 1) from None


ARG_FORMS = ("NAME=NUMBER (a scalar), NAME=SHAPE:DTYPE (a buffer: 64x48:f32), or "
             "NAME=SHAPE:DTYPE:box=BOX[:swizzle=none|32B|64B|128B][:oob=zero|nan] (a tensor map over a buffer of its own: "
             "64x64:f32:box=32x32)")


def arg_item(item: str) -> tuple[str, str, object]:
    """One ``--arg``: ``(name, "scalar", number)``, ``(name, "buffer", {dtype, shape})`` or
    ``(name, "tensormap", {dtype, shape, box, swizzle, oob_fill})``. Shapes are outermost first
    (``64x48``: 64 rows of 48), as in a launch spec."""
    name, eq, text = item.partition("=")
    if not eq or not name:
        raise KernelError(f"--arg expects {ARG_FORMS}; got {item!r}", "<command line>", 1, 1)
    if ":" not in text:
        return name, "scalar", arg_value(item)[1]
    shape, dtype, *opts = text.split(":")

    def dims_of(t, what):
        if not re.fullmatch(r"\d+(x\d+)*", t):
            raise KernelError(f"--arg {name}: {what} is N or AxB..., got {t!r} ({ARG_FORMS})", "<command line>", 1, 1)
        return [int(d) for d in t.split("x")]

    d = {"dtype": dtype, "shape": dims_of(shape, "the shape")}
    if not opts:
        return name, "buffer", d
    tm = dict(d, swizzle="none")
    for o in opts:
        key, eq, val = o.partition("=")
        if key == "box" and eq:
            tm["box"] = dims_of(val, "the box")
        elif key == "swizzle" and eq:
            tm["swizzle"] = val
        elif key == "oob" and eq:
            tm["oob_fill"] = val
        else:
            raise KernelError(f"--arg {name}: unknown tensor-map option {o!r} ({ARG_FORMS})", "<command line>", 1, 1)
    if "box" not in tm:
        raise KernelError(f"--arg {name}: a tensor map needs box=... ({ARG_FORMS})", "<command line>", 1, 1)
    return name, "tensormap", tm


def from_flags(kernel, file: str, grid: str | None = None, block: str | None = None, args=(),
               cluster: str | None = None, dynamic_smem: int | None = None) -> LaunchSpec | None:
    """A launch from ``--grid/--block/--cluster/--dynamic-smem/--arg``, a GPUVerify header of a
    ``.cu`` file, or the kernel's own block size; ``None`` when the zoo manifest next to ``file``
    should be used. ``--arg`` gives scalars, buffers and tensor maps (``arg_item``); pointer
    parameters given none are sized from the kernel's accesses by the checkers. The cluster
    defaults to the kernel's ``.reqnctapercluster``."""
    hdr = gpuverify_header(file) if file.endswith((".cu", ".cuh")) else None
    if not (grid or block or args or hdr or cluster or dynamic_smem):
        if manifest_next_to(file):
            return None
        if kernel.block_dim is None:
            raise KernelError(f"no block size for {kernel.name}: give --launch SPEC or --block X[,Y,Z] "
                              f"(or .reqntid / __launch_bounds__ in the kernel)", file, *_entry_at(kernel, file))
        return replace(LaunchSpec.from_dict({"kernel": kernel.name, "block": list(kernel.block_dim),
                                             "cluster": _kernel_cluster(kernel)}, "<command line>"),
                       block_from=".reqntid" if kernel.directive("reqntid") else ".maxntid")
    b = dims(block, "--block", file) if block else (hdr[0] if hdr else list(kernel.block_dim or []))
    if not b:
        raise KernelError(f"no block size for {kernel.name}: give --block X[,Y,Z]", file, *_entry_at(kernel, file))
    g = dims(grid, "--grid", file) if grid else (hdr[1] if hdr else None)
    c = dims(cluster, "--cluster", file) if cluster else _kernel_cluster(kernel)
    values, buffers, tensormaps = {}, {}, {}
    known = {k for i, p in enumerate(kernel.params) for k in (p.source_name, p.name, str(i)) if k is not None}
    for item in args or ():
        name, kind, v = arg_item(item)
        if name not in known:
            names = ", ".join(f"{p.source_name} ({p.name})" if p.source_name else p.name for p in kernel.params)
            raise KernelError(f"--arg {name}: {kernel.name} has no parameter of that name (parameters: {names}; "
                              f"a position 0..{len(kernel.params) - 1} also works)", "<command line>", 1, 1)
        param = kernel.param(int(name) if name.isdigit() else name)
        if param.array and kind != "tensormap":  # a .b8 p[N] by-value parameter: a map or a struct
            raise KernelError(f"--arg {name}: {param.name} is a {param.size}-byte by-value parameter: give a tensor "
                              f"map (SHAPE:DTYPE:box=BOX) or, for a struct, a launch spec", "<command line>", 1, 1)
        if kind == "scalar":
            values[name] = v
        elif kind == "buffer":
            buffers[name] = v
        else:  # the map's global memory: a buffer of its own, named after the parameter
            buffers[f"{name}_global"] = {"dtype": v["dtype"], "shape": v["shape"]}
            tensormaps[name] = dict(v, buffer=f"{name}_global")
    # without a grid the run uses one CTA and the spec says the grid was assumed
    # (``LaunchSpec.grid_assumed``): the SMT checkers then stay symbolic in it
    d = {"kernel": kernel.name, "grid": g, "block": b, "cluster": c, "args": values, "buffers": buffers,
         "dynamic_smem": int(dynamic_smem or 0)}
    if tensormaps:
        d["tensormaps"] = tensormaps
    return LaunchSpec.from_dict(d, "<command line>")


def _kernel_cluster(kernel):
    v = kernel.directive("reqnctapercluster")
    return list(v) + [1] * (3 - len(v)) if v else None


# --------------------------------------------------------------------------- the resolver


def resolve(launch=None, file: str | None = None, kernel: str | None = None, values: dict | None = None,
            required: str = REQUIRED) -> Resolved:
    """The ``LaunchSpec`` of ``launch`` for ``file`` (see ``load``), a template
    instantiated with ``values``."""
    src = load(launch, file, kernel, required)
    return Resolved(LaunchSpec.from_dict(instantiate(src.data, values, src.path), src.path), src.path, src.reference)

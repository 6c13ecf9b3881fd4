"""GPUVerify tests as CUDA input: the test header, the annotation intrinsics and their markers.

A GPUVerify test starts with two comment lines: its label (``//pass`` or ``//xfail:REASON``, any
case) and GPUVerify's options (``//--blockDim=64 --gridDim=[2,2] -DWIDTH=32``). Its kernels use
GPUVerify's annotation intrinsics (``__requires``, ``__assert``, ``__invariant``, ...), which
GPUVerify's own ``cuda.h`` declares and nvcc does not know. When kverify compiles such a file it
force-includes ``gpuverify.h`` (next to this module, installed with the package), which defines
them (the header's comment lists each group):

- ``__assert`` calls the body-less marker ``__kverify_assert(holds)``; CUDA's own ``assert()``
  calls ``__assertfail`` when it fails. Both are assertions: rule ``assert.failed``.
- ``__requires`` / ``__assume`` call ``__kverify_requires(holds)`` / ``__kverify_assume(holds)``:
  preconditions. The symbolic checkers assume them; a run whose values break one is no evidence
  about the kernel (the interpreter stops and says so).
- the predicates kverify does not evaluate (``__other_int``, ``__uniform_bool``, ``__write``,
  ``__write_offset_bytes``, ...) call ``__kverify_gv<intrinsic>``, whose result is unknown: an
  assertion or precondition using one is not decided by its value.
- proof hints (``__invariant``, ``__ensures``, ``__axiom``, ...) compile to nothing;
  ``annotations`` finds them in the source so that the report can say they were not checked.

GPUVerify's ``cuda.h`` also brings cooperative groups (with free ``synchronize(g)`` functions) and
cuRAND: the first is included when the source names it, the second needs ``curand_kernel.h``,
which a CUDA toolkit may not have (then the file is bad input naming the line).
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .errors import KernelError

#: The header force-included into GPUVerify tests.
HEADER = Path(__file__).with_name("gpuverify.h")

#: Markers (body-less functions the header calls) and CUDA's own assertion failure.
ASSERT = "__kverify_assert"
REQUIRES = "__kverify_requires"
ASSUME = "__kverify_assume"
ASSERTFAIL = "__assertfail"
UNEVALUATED_PREFIX = "__kverify_gv"
#: marker -> the intrinsic a message names
PRECONDITIONS = {REQUIRES: "__requires", ASSUME: "__assume"}

#: Intrinsics that compile to nothing (proof hints and axioms): their uses are listed as not checked.
HINTS = ("__invariant", "__global_invariant", "__candidate_invariant", "__candidate_global_invariant",
         "__function_wide_invariant", "__function_wide_candidate_invariant", "__candidate_assert",
         "__candidate_global_assert", "__ensures", "__global_ensures", "__reads_from", "__writes_to",
         "__requires_fresh_array", "__axiom")
_HINT_USE = re.compile(r"\b(" + "|".join(HINTS) + r")\s*\(")
_COOPERATIVE = re.compile(r"\b(cooperative_groups|this_grid|this_thread_block|grid_group|thread_block)\b")
_CURAND = re.compile(r"\b(?:curandState\w*|curand_init|curand_(?:uniform|normal|log_normal|poisson)\w*|curand(?=\s*\())")


def intrinsic_of(name: str) -> str | None:
    """The GPUVerify intrinsic a marker function stands for (``__kverify_gv__other_int`` ->
    ``__other_int``; ``__kverify_requires`` -> ``__requires``), ``None`` for other functions."""
    if name.startswith(UNEVALUATED_PREFIX):
        return name[len(UNEVALUATED_PREFIX):]
    if name in PRECONDITIONS:
        return PRECONDITIONS[name]
    if name == ASSERT:
        return "__assert"
    return None


def is_marker(name: str) -> bool:
    """A call kverify gives a meaning of its own: the header's markers and ``__assertfail``."""
    return name in (ASSERT, REQUIRES, ASSUME, ASSERTFAIL) or name.startswith(UNEVALUATED_PREFIX)


def header_lines(path: str):
    """The two header lines of a GPUVerify test (line 1 ``//pass`` or ``//xfail:...``, any
    case), else None."""
    try:
        with open(path, errors="replace") as f:
            lines = [f.readline(), f.readline()]
    except OSError:
        return None
    lines = [ln.rstrip("\r\n") for ln in lines]
    return lines if re.match(r"//\s*(pass|xfail)", lines[0], re.IGNORECASE) else None


def is_test(path: str) -> bool:
    return header_lines(path) is not None


def strip_comments(text: str) -> str:
    """``text`` with its comments blanked out (line and column numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def annotations(source: str) -> list:
    """``[(intrinsic, line, column)]`` of every proof hint or axiom the source uses (comments
    left out), in source order."""
    text = strip_comments(source)
    out = []
    for m in _HINT_USE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        out.append((m.group(1), line, col))
    return out


def _cuda_include_dirs() -> list:
    dirs = []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        dirs.append(Path(home) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(os.path.realpath(nvcc)).parent.parent / "include")
    dirs.append(Path("/usr/local/cuda/include"))
    return dirs


def compile_options(path: str, source: str) -> tuple[list, dict]:
    """``(headers to force-include, preprocessor definitions)`` for compiling the GPUVerify test
    ``path`` (its text ``source``): ``gpuverify.h``, with cooperative groups when the source
    names them, and ``curand_kernel.h`` when it uses cuRAND without including it. A test that needs
    cuRAND where the toolkit has no ``curand_kernel.h`` is bad input at the line that uses it."""
    text = strip_comments(source)
    includes, defines = [str(HEADER)], {}
    if _COOPERATIVE.search(text):
        defines["KVERIFY_GPUVERIFY_COOPERATIVE_GROUPS"] = None
    m = _CURAND.search(text)
    if m and not re.search(r"#\s*include\s*[<\"]curand", text):
        found = next((d / "curand_kernel.h" for d in _cuda_include_dirs() if (d / "curand_kernel.h").is_file()), None)
        if found is None:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise KernelError(f"{m.group()}: this GPUVerify test relies on GPUVerify's cuda.h providing cuRAND, and "
                              "this CUDA toolkit has no curand_kernel.h to include in its place", path, line, col)
        includes.append(str(found))
    return includes, defines


def marker_of(ins) -> str | None:
    """The marker (``is_marker``) a ``call`` instruction calls, else None."""
    row = getattr(ins, "row", None)
    if row is None or row.flow != "call":
        return None
    from .nodes import Sym

    name = next((o.name for o in ins.operands if isinstance(o, Sym)), None)
    return name if name is not None and is_marker(name) else None


def call_args(ins) -> list:
    """The ``.param`` names a ``call`` passes (its argument list), in order."""
    from .nodes import ParenList, Sym

    sym_at = next((i for i, o in enumerate(ins.operands) if isinstance(o, Sym)), None)
    after = [o for i, o in enumerate(ins.operands) if isinstance(o, ParenList) and sym_at is not None and i > sym_at]
    args = after[0] if after else None
    return [e.name for e in args.elems if hasattr(e, "name")] if args is not None else []


def call_rets(ins) -> list:
    """The ``.param`` names a ``call`` receives its results in (before the callee), in order."""
    from .nodes import ParenList, Sym

    sym_at = next((i for i, o in enumerate(ins.operands) if isinstance(o, Sym)), None)
    before = [o for i, o in enumerate(ins.operands) if isinstance(o, ParenList) and sym_at is not None and i < sym_at]
    return [e.name for e in before[0].elems if hasattr(e, "name")] if before else []

"""Building lowered CUDA without a GPU: nvcc to PTX, ptxas to SASS, and the multiset of
synchronization instructions in a PTX text (to check that lowering kept every barrier,
fence, async copy and wgmma of the original).

Floating-point flags. Every arithmetic instruction of a lowered kernel is inline PTX that
names its own rounding and flush modes (``add.rn.f32``, ``div.full.f32``, ``.ftz``), and
the lowered code has no C-level floating-point arithmetic, so nvcc's ``--ftz``,
``--prec-div`` and ``--prec-sqrt`` change nothing; they are pinned to IEEE values anyway.
One PTX rule needs a flag: a ``mul``/``add``/``sub`` *without* a rounding modifier may be
contracted into an ``fma`` by ptxas (PTX ISA 9.7.3), and ptxas does so by default.
``--fmad=false`` forbids that, so each such instruction rounds on its own as the semantics
assumes; the original binary built with default flags may differ in the last bit there.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from kverify.semantics.ir.optable import OPS, split_opcode

ARCH = "sm_90a"

#: Floating-point flags, given to nvcc (which forwards ``--fmad`` to ptxas) and to ptxas.
FP_FLAGS = {"fmad": False, "ftz": False, "prec_div": True, "prec_sqrt": True}

NVCC_FLAGS = ("-std=c++17", "-lineinfo", "--fmad=false", "--ftz=false", "--prec-div=true",
              "--prec-sqrt=true")
PTXAS_FLAGS = ("--fmad=false",)



class BuildError(Exception):
    """nvcc or ptxas rejected a lowered translation unit; ``log`` has its diagnostics."""

    def __init__(self, stage: str, log: str):
        super().__init__(f"{stage} failed:\n{log}")
        self.stage = stage
        self.log = log


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None


def compile_to_ptx(source: str, arch: str = ARCH, workdir: str | None = None,
                   name: str = "lowered") -> str:
    """nvcc ``-ptx``: the PTX text of a CUDA translation unit."""
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        cu = Path(d) / f"{name}.cu"
        out = Path(d) / f"{name}.ptx"
        cu.write_text(source)
        r = subprocess.run(["nvcc", f"-arch={arch}", "-ptx", *NVCC_FLAGS, str(cu), "-o", str(out)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError("nvcc", r.stdout + r.stderr)
        return out.read_text()


def assemble(ptx: str, arch: str = ARCH, workdir: str | None = None, name: str = "lowered") -> bytes:
    """ptxas: the cubin of a PTX text."""
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        src = Path(d) / f"{name}.ptx"
        out = Path(d) / f"{name}.cubin"
        src.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch={arch}", *PTXAS_FLAGS, str(src), "-o", str(out)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError("ptxas", r.stdout + r.stderr)
        return out.read_bytes()


def gencode(arch: str = ARCH) -> str:
    """``-gencode`` for SASS of exactly ``arch``. (nvcc 13's ``-arch=sm_90a -c`` also embeds
    PTX for the family target ``compute_90``, which rejects wgmma/setmaxnreg; ``-ptx`` with
    ``-arch=sm_90a`` does target ``sm_90a``.)"""
    return f"-gencode=arch={arch.replace('sm_', 'compute_')},code={arch}"


def compile_object(source: str, arch: str = ARCH, workdir: str | None = None,
                   name: str = "lowered", include_dirs=(), extra=()) -> bytes:
    """nvcc ``-c``: the host object (with the embedded cubin) of a translation unit."""
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        cu = Path(d) / f"{name}.cu"
        out = Path(d) / f"{name}.o"
        cu.write_text(source)
        cmd = ["nvcc", gencode(arch), "-c", *NVCC_FLAGS, "-Xcompiler", "-fPIC",
               *[f"-I{i}" for i in include_dirs], *extra, str(cu), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError("nvcc", r.stdout + r.stderr)
        return out.read_bytes()


def build(source: str, arch: str = ARCH, workdir: str | None = None,
          name: str = "lowered") -> tuple[str, bytes]:
    """``(ptx, cubin)`` of a lowered translation unit."""
    ptx = compile_to_ptx(source, arch, workdir, name)
    return ptx, assemble(ptx, arch, workdir, name)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LINE_DIRECTIVE = re.compile(r"^[ \t]*\.(?:loc|file)\b[^\n]*$", re.M)
_GUARD = re.compile(r"^@!?%?[\w$]+\s+")
_LABEL = re.compile(r"^[\w$]+:\s*")


def opcodes(ptx: str):
    """The opcode of every instruction statement in a PTX text (directives skipped)."""
    text = _LINE_DIRECTIVE.sub("", _COMMENT.sub("", ptx))
    for stmt in re.split(r"[;{}]", text):
        s = stmt.strip()
        while True:
            m = _LABEL.match(s)
            if not m:
                break
            s = s[m.end():]
        s = _GUARD.sub("", s)
        if not s or s.startswith("."):
            continue
        tok = s.split(None, 1)[0]
        if tok and tok[0].isalpha():
            yield tok


def sync_multiset(ptx: str) -> Counter:
    """How many times each synchronization opcode occurs in a PTX text: every opcode whose
    op-table row synchronizes or is asynchronous (barriers, mbarriers, fences, cp.async and
    bulk copies, wgmma), warp collectives aside."""
    return Counter(op for op in opcodes(ptx) if _synchronizes(op))


def _synchronizes(opcode: str) -> bool:
    family, _, _ = split_opcode(opcode)
    row = OPS.get(family)
    return row is not None and row.effect in ("sync", "async") and row.collective is None


def function_bodies(ptx: str) -> dict:
    """``{name: text}`` of each ``.entry``/``.func`` defined in a PTX text (header to closing
    brace); prototypes are skipped."""
    text = _COMMENT.sub("", ptx)
    out = {}
    for m in re.finditer(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", text):
        j, depth = m.end(), 0
        while j < len(text):
            c = text[j]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif depth == 0 and c in ";{":
                break
            j += 1
        if j >= len(text) or text[j] == ";":
            continue
        depth, k = 0, j
        while k < len(text):
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out[m.group(1)] = text[m.start():k + 1]
    return out


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))

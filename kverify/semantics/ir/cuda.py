"""CUDA C++ front end: ``.cu`` -> PTX with ``-lineinfo`` (so ``.loc`` maps every
instruction to its CUDA line) through ``nvcc`` when it is on PATH, else NVRTC
(``cuda.bindings.nvrtc``, which needs no GPU driver); then the PTX front end. Kernel
parameters get their CUDA names from the source."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from .errors import KernelError
from .nodes import Module
from .ptx import parse_ptx

DEFAULT_ARCH = "sm_90a"
#: EDG (nvcc's front end): ``file(line): error: msg``, then the line echoed and a caret under the column
_DIAG = re.compile(r"^(?P<file>[^\n(]+)\((?P<line>\d+)\): (?P<kind>error|catastrophic error)\s*:?\s*(?P<msg>.*)$"
                   r"(?:\n(?P<echo>[^\n]*)\n(?P<caret>[ \t]*\^))?", re.M)
#: the host preprocessor (an ``#include`` not found): ``file:line:col: fatal error: msg``
_GCC = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.M)
#: ptxas on the PTX nvcc generated (inline ``asm`` it rejects): ``ptxas FILE, line N; error : msg``
_PTXAS = re.compile(r"^ptxas (?P<file>[^\n,]+), line (?P<line>\d+); error\s*: (?P<msg>.*)$", re.M)


def _compile_error(log: str, src: Path, ptx: Path | None = None) -> KernelError:
    """The compiler's first error as ``file:line:col``: the file it names (a header, or the source),
    the column under EDG's caret, and for a ptxas error the CUDA line its PTX line came from."""
    def where(file: str) -> str:
        f = Path(file)
        return str(src) if f.name == src.name and (not f.is_absolute() or f == src.resolve()) else \
            str(f if f.is_absolute() else src.parent / f)
    m = _DIAG.search(log)
    if m:
        path = where(m.group("file").strip())
        return KernelError(m.group("msg").strip(), path, int(m.group("line")),
                           _caret_column(m.group("echo"), m.group("caret"), path, int(m.group("line"))))
    m = _GCC.search(log)
    if m:
        return KernelError(m.group("msg").strip(), where(m.group("file")), int(m.group("line")), int(m.group("col")))
    m = _PTXAS.search(log)
    if m:
        at = _loc_of(ptx, int(m.group("line"))) if ptx is not None and ptx.is_file() else None
        msg = f"ptxas: {m.group('msg').strip()} (line {m.group('line')} of the PTX nvcc generated: inline asm?)"
        if at is not None:
            return KernelError(msg, where(at[0]), at[1], at[2])
        return KernelError(msg, str(src), 1, 1)
    first = next((ln for ln in log.splitlines() if ln.strip()), "compilation failed")
    return KernelError(first.strip(), str(src), 1, 1)


def _caret_column(echo: str | None, caret: str | None, path: str, line: int) -> int:
    """The 1-based column EDG's caret points at, in the file's own line (EDG echoes the line
    indented by two and with macros such as ``__global__`` expanded: the text under the caret is
    looked up in the real line)."""
    if not echo or not caret:
        return 1
    at = len(caret) - 1
    try:
        real = Path(path).read_text(errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return max(1, at - 1)
    if echo[2:] == real:
        return max(1, at - 1)
    token = re.match(r"\S+", echo[at:])
    i = real.find(token.group()) if token else -1
    return i + 1 if i >= 0 else 1


def _loc_of(ptx: Path, ptx_line: int) -> tuple[str, int, int] | None:
    """(file, line, column) of the last ``.loc`` at or before ``ptx_line`` of nvcc's PTX."""
    lines = ptx.read_text(errors="replace").splitlines()
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', "\n".join(lines), re.M))
    for text in reversed(lines[:ptx_line]):
        m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", text)
        if m and m.group(1) in files and int(m.group(2)) > 0:
            return files[m.group(1)], int(m.group(2)), max(1, int(m.group(3)))
    return None


def compile_cuda(path: str, arch: str = DEFAULT_ARCH, defines: dict | None = None,
                 include_dirs: tuple = (), compiler: str | None = None, pre_includes: tuple = ()) -> tuple[str, str]:
    """Return ``(ptx_text, compiler_used)``. ``compiler`` forces ``nvcc`` or ``nvrtc``;
    ``pre_includes`` are headers included before the file's first line."""
    src = Path(path)
    if not src.is_file():
        raise KernelError("no such file", str(path), 0, 0)
    flags = _flags(defines, include_dirs)
    use = compiler or ("nvcc" if shutil.which("nvcc") else "nvrtc")
    if use == "nvcc":
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / (src.stem + ".ptx")
            pre = [x for h in pre_includes for x in ("-include", str(h))]
            cmd = ["nvcc", f"-arch={arch}", "-lineinfo", "-ptx", *flags, *pre, "-o", str(out), src.name]
            try:
                r = subprocess.run(cmd, cwd=src.parent.resolve(), capture_output=True, text=True, timeout=300)
            except FileNotFoundError:
                raise KernelError("nvcc is not on PATH", str(path), 0, 0) from None
            if r.returncode != 0:
                raise _compile_error(r.stderr + r.stdout, src, out)
            return out.read_text(), "nvcc"
    return _nvrtc(src, arch, flags + [f"--pre-include={h}" for h in pre_includes]), "nvrtc"


def _nvrtc(src: Path, arch: str, flags: list) -> str:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise KernelError("no CUDA compiler: nvcc is not on PATH and cuda-python is not installed "
                          "(pip install 'kverify[gpu]')", str(src), 0, 0) from None
    text = src.read_text()
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), src.name.encode(), 0, [], [])
    opts = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}", "-lineinfo", "--std=c++17",
            *flags]
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if Path(cuda_home, "include").is_dir():
        opts.append(f"-I{cuda_home}/include")
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise _compile_error(log.decode(errors="replace"), src)
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    return ptx.decode().rstrip("\x00 ")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def kernel_param_names(source: str) -> dict[str, list[str]]:
    """``{function name: [parameter names]}`` for every ``__global__`` function."""
    text = _strip_comments(source)
    out = {}
    for m in re.finditer(r"__global__", text):
        i = m.end()
        paren = text.find("(", i)
        if paren < 0:
            continue
        head = text[i:paren]
        name = re.findall(r"[A-Za-z_]\w*", head)
        # skip __launch_bounds__(...) / __cluster_dims__(...) attributes before the name
        while name and name[-1] in ("__launch_bounds__", "__cluster_dims__", "__maxnreg__"):
            close = _match(text, paren)
            paren = text.find("(", close + 1)
            head = text[close + 1:paren]
            name = re.findall(r"[A-Za-z_]\w*", head)
        if not name:
            continue
        close = _match(text, paren)
        params = _split_params(text[paren + 1:close])
        out[name[-1]] = [p for p in (_param_name(x) for x in params) if p]
    return out


def _match(text: str, open_i: int) -> int:
    depth = 0
    for j in range(open_i, len(text)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def _split_params(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def _param_name(decl: str) -> str | None:
    decl = re.sub(r"=.*$", "", decl.strip())
    decl = re.sub(r"\[[^\]]*\]", "", decl)
    ids = re.findall(r"[A-Za-z_]\w*", decl)
    if len(ids) < 2 or decl.strip() == "void":
        return None
    return ids[-1]


def _ptx_name_matches(ptx_name: str, cuda_name: str) -> bool:
    # the Itanium mangling: _Z, the name's length, the name, then the parameter types, which may
    # start with a digit (a class type: ``_Z3foo1S`` is foo(S))
    return ptx_name == cuda_name or re.match(rf"_Z{len(cuda_name)}{re.escape(cuda_name)}.", ptx_name) is not None


def attach_source_names(module: Module, source: str) -> Module:
    names = kernel_param_names(source)
    kernels = []
    for k in module.kernels:
        found = next((v for n, v in names.items() if _ptx_name_matches(k.name, n)), None)
        if found is not None and len(found) == len(k.params):
            k = replace(k, params=tuple(replace(p, source_name=s) for p, s in zip(k.params, found)))
        kernels.append(k)
    return replace(module, kernels=tuple(kernels))


def _flags(defines: dict | None, include_dirs: tuple = ()) -> list:
    return ([f"-D{k}" + (f"={v}" if v is not None else "") for k, v in (defines or {}).items()]
            + [f"-I{d}" for d in include_dirs])


def _test_options(path: str, defines: dict | None) -> tuple[tuple, dict | None]:
    """``(pre_includes, defines)`` ``load_cuda`` compiles ``path`` with: a GPUVerify test
    (``gpuverify.is_test``) gets GPUVerify's annotation intrinsics from ``gpuverify.h`` and the
    definitions of its header (``gpuverify.compile_options``)."""
    from . import gpuverify

    if gpuverify.is_test(path) and Path(path).is_file():
        pre, extra = gpuverify.compile_options(path, Path(path).read_text(errors="replace"))
        return tuple(pre), {**extra, **(defines or {})}
    return (), defines


def dependencies(path: str, arch: str = DEFAULT_ARCH, defines: dict | None = None) -> list | None:
    """The files ``nvcc -MM`` lists for ``path`` compiled as ``load_cuda`` compiles it (in its
    directory, with the same definitions and pre-included headers), ``path`` first, headers of
    the system's directories left out; ``None`` when nvcc is missing or cannot list them."""
    src = Path(path)
    try:
        pre, defines = _test_options(path, defines)
    except KernelError:  # a test header that does not read: the check reports it
        return None
    cmd = ["nvcc", f"-arch={arch}", "-MM", *_flags(defines), *[x for h in pre for x in ("-include", str(h))], src.name]
    try:
        r = subprocess.run(cmd, cwd=src.parent.resolve(), capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    rule = r.stdout.replace("\\\n", " ").partition(":")[2]  # "k.o : k.cu a.h \\\n b.h": what follows the target
    names = [n.replace("\\ ", " ") for n in re.findall(r"(?:\\ |\S)+", rule)]
    return [src] + [f for f in dict.fromkeys((src.parent / n).resolve() for n in names) if f != src and f.is_file()]


def load_cuda(path: str, arch: str = DEFAULT_ARCH, defines: dict | None = None,
              compiler: str | None = None) -> Module:
    """Compile and parse ``path`` (with ``_test_options``: a GPUVerify test's header)."""
    pre, defines = _test_options(path, defines)
    ptx, _ = compile_cuda(path, arch, defines, compiler=compiler, pre_includes=pre)
    m = parse_ptx(ptx, str(path) + ".ptx")
    return attach_source_names(m, Path(path).read_text())


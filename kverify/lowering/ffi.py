"""TVM-FFI host wrappers for lowered kernels.

``ffi_source(module, kernel, spec)`` returns one CUDA translation unit: the lowered kernel
plus a C++ function exported with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` that takes DLPack
tensors (``tvm::ffi::TensorView``: torch, numpy, ...) and scalars, checks every argument,
binds the symbolic dimensions, and launches the kernel on the caller's current stream
(``TVMFFIEnvGetStream``) with ``cudaLaunchKernelEx`` (cluster dimensions included).

Checks, in this order for each tensor argument: rank, dtype, every shape constraint,
contiguity, then the device (CUDA, and the same device as the first tensor). Shape and
dtype come before the device so a wrong call fails the same way on any machine. Each
failure raises ``ValueError`` (``TypeError`` for a dtype) naming the argument and the
constraint::

    Invalid A.shape[0] on argument #0 when calling add_one(A: Tensor([2 * n], float32),
    B: Tensor([n], float32)): expected A.shape[0] to be divisible by 2, got 7

Shapes are ints or expressions over symbols (``"n"``, ``"2 * n"``, ``"n + 1"``,
``"ceildiv(n, 4)"``). A dimension of the form ``a * x + b`` (``a``, ``b`` integers) with one
unbound symbol ``x`` binds ``x``; every other dimension is checked for equality once its
symbols are bound. Scalar arguments bind their own names first. Kernel parameters, grid,
block and dynamic shared memory are expressions over the same symbols.

``.b8 p[128]`` tensor-map parameters are built in the wrapper with
``cuTensorMapEncodeTiled`` (fetched through ``cudaGetDriverEntryPointByVersion``, so no
``-lcuda``) from a tensor argument, a box and a swizzle mode.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from kverify.launch import dtypes
from kverify.semantics.ir.nodes import Kernel, Module

from .build import ARCH, NVCC_FLAGS
from .ctype import _C_KEYWORDS, LoweringError, bytes_struct, value_ctype
from .cuda import lower_kernel

#: scalar argument dtype -> (C++ type of the exported function's parameter, range check)
SCALAR_TYPES = {
    "int32": ("int64_t", ("INT32_MIN", "INT32_MAX")), "int64": ("int64_t", None),
    "uint32": ("int64_t", ("0", "UINT32_MAX")), "uint64": ("int64_t", ("0", "INT64_MAX")),
    "float32": ("double", None), "float64": ("double", None), "bool": ("bool", None),
}
SWIZZLES = {"none": "CU_TENSOR_MAP_SWIZZLE_NONE", "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
            "64B": "CU_TENSOR_MAP_SWIZZLE_64B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B"}


# --------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument: dtype name and shape (ints or symbolic expressions)."""

    name: str
    dtype: str
    shape: tuple


@dataclass(frozen=True)
class ScalarArg:
    name: str
    dtype: str = "int32"


@dataclass(frozen=True)
class TensorMap:
    """A ``CUtensorMap`` kernel parameter over tensor argument ``buffer``; ``box`` in the
    tensor's dimension order (outermost first), as the zoo manifests write it."""

    buffer: str
    box: tuple
    swizzle: str = "none"


@dataclass(frozen=True)
class FfiSpec:
    """How to call one kernel: the exported function's arguments in order, one binding per
    kernel parameter (a tensor argument's name for its data pointer, an expression, an int,
    or a ``TensorMap``), and the launch shape as expressions."""

    name: str
    args: tuple
    params: tuple
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    cluster: tuple = (1, 1, 1)
    shared_bytes: object = 0

    def signature(self) -> str:
        parts = []
        for a in self.args:
            if isinstance(a, TensorArg):
                dims = ", ".join(_pretty(_parse(d)) for d in a.shape)
                parts.append(f"{a.name}: Tensor([{dims}], {a.dtype})")
            else:
                parts.append(f"{a.name}: {a.dtype}")
        return f"{self.name}({', '.join(parts)})"


def spec_from_launch(kernel: Kernel, launch: dict, name: str | None = None,
                     shapes: dict | None = None, bake=()) -> FfiSpec:
    """An ``FfiSpec`` from a zoo manifest ``launch`` entry: buffers become tensor arguments
    (``shapes`` may replace their shapes by symbolic ones), ``args`` scalar arguments except
    those named in ``bake`` (or all, with ``bake=True``), which become constants with the
    manifest's value; ``tensormaps`` become tensor-map parameters. Parameters are matched by
    CUDA name, PTX name, or position."""
    buffers = dict(launch.get("buffers") or {})
    scalars = dict(launch.get("args") or {})
    tmaps = dict(launch.get("tensormaps") or {})
    shapes = shapes or {}
    args: list = []
    params: list = []
    seen: set = set()
    for i, p in enumerate(kernel.params):
        keys = [k for k in (p.source_name, p.name, str(i)) if k is not None]
        key = next((k for k in keys if k in buffers or k in scalars or k in tmaps), None)
        if key is None:
            raise LoweringError(f"launch spec binds no value to parameter #{i} ({p.name})",
                                kernel.loc)
        if key in tmaps:
            t = tmaps[key]
            if t.get("mode", "tile") != "tile":
                raise LoweringError(f"parameter #{i} ({p.name}): {t.get('mode')}-mode tensor maps are not supported "
                                    f"by the TVM-FFI lowering (tiled maps only, cuTensorMapEncodeTiled); validate "
                                    f"the kernel's own PTX with `kverify validate` instead", kernel.loc)
            buf = t["buffer"]
            if buf not in seen:
                b = buffers[buf]
                args.append(TensorArg(buf, b["dtype"], tuple(shapes.get(buf, b["shape"]))))
                seen.add(buf)
            params.append(TensorMap(buf, tuple(t["box"]), t.get("swizzle", "none")))
        elif key in buffers:
            if key not in seen:
                b = buffers[key]
                args.append(TensorArg(key, b["dtype"], tuple(shapes.get(key, b["shape"]))))
                seen.add(key)
            params.append(key)
        else:
            v = scalars[key]
            if bake is True or key in bake:
                if isinstance(v, float) or p.type.name in ("f32", "f64"):
                    raise LoweringError(f"cannot bake float argument {key}; pass it at call time")
                params.append(int(v))
                continue
            sname = _c_name(key)
            dt = {"f32": "float32", "f64": "float64", "s64": "int64", "u64": "uint64",
                  "b64": "uint64"}.get(p.type.name, "int32")
            args.append(ScalarArg(sname, dt))
            params.append(sname)
    # buffers no parameter names still travel as arguments (a tensor map's backing array)
    for bname, b in buffers.items():
        if bname not in seen:
            args.append(TensorArg(bname, b["dtype"], tuple(shapes.get(bname, b["shape"]))))
    return FfiSpec(name or kernel.name, tuple(args), tuple(params),
                   tuple(launch.get("grid") or (1, 1, 1)), tuple(launch.get("block") or (1, 1, 1)),
                   tuple(launch.get("cluster") or (1, 1, 1)),
                   launch.get("shared_bytes", launch.get("dynamic_smem", 0)) or 0)


def _c_name(s: str) -> str:
    import re

    s = re.sub(r"\W", "_", s)
    return s if s and not s[0].isdigit() else "a_" + s


# --------------------------------------------------------------------------- expressions

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Div: "/",
           ast.Mod: "%"}
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def _parse(e) -> ast.AST:
    if isinstance(e, bool):
        raise LoweringError(f"not a shape expression: {e!r}")
    if isinstance(e, int):
        return ast.Constant(e)
    try:
        node = ast.parse(str(e), mode="eval").body
    except SyntaxError:
        raise LoweringError(f"cannot parse shape expression {e!r}") from None
    _validate(node, e)
    return node


def _validate(n, src):
    if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
        return
    if isinstance(n, ast.Name):
        return
    if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
        _validate(n.left, src)
        _validate(n.right, src)
        return
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        _validate(n.operand, src)
        return
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
            n.func.id in ("ceildiv", "min", "max") and len(n.args) == 2 and not n.keywords:
        for a in n.args:
            _validate(a, src)
        return
    raise LoweringError(f"unsupported construct in shape expression {src!r}")


def _pretty(n, parent: int = 0) -> str:
    if isinstance(n, ast.Constant):
        return str(n.value)
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.UnaryOp):
        return "-" + _pretty(n.operand, 3)
    if isinstance(n, ast.Call):
        return f"{n.func.id}({_pretty(n.args[0])}, {_pretty(n.args[1])})"
    op = _BINOPS[type(n.op)]
    op_s = "//" if isinstance(n.op, ast.FloorDiv) else op
    p = _PREC[op]
    s = f"{_pretty(n.left, p)} {op_s} {_pretty(n.right, p + 1)}"
    return f"({s})" if p < parent else s


def _cpp(n, env: dict) -> str:
    """C++ int64 expression; ``env`` maps symbol -> C++ variable."""
    if isinstance(n, ast.Constant):
        return f"int64_t({n.value})"
    if isinstance(n, ast.Name):
        if n.id not in env:
            raise LoweringError(f"symbol {n.id} is not bound by any argument or shape")
        return env[n.id]
    if isinstance(n, ast.UnaryOp):
        return f"(-{_cpp(n.operand, env)})"
    if isinstance(n, ast.Call):
        a, b = (_cpp(x, env) for x in n.args)
        if n.func.id == "ceildiv":
            return f"kv_ceildiv({a}, {b})"
        return f"std::{n.func.id}<int64_t>({a}, {b})"
    op = _BINOPS[type(n.op)]
    return f"({_cpp(n.left, env)} {op} {_cpp(n.right, env)})"


def _symbols(n) -> set:
    out = set()
    for x in ast.walk(n):
        if isinstance(x, ast.Name):
            out.add(x.id)
    out.discard("ceildiv")
    out.discard("min")
    out.discard("max")
    return out


def _linear(n, x: str):
    """``(a, b)`` integers with ``n == a*x + b``, or ``None``."""
    if isinstance(n, ast.Constant):
        return 0, n.value
    if isinstance(n, ast.Name):
        return (1, 0) if n.id == x else None
    if isinstance(n, ast.UnaryOp):
        r = _linear(n.operand, x)
        return None if r is None else (-r[0], -r[1])
    if isinstance(n, ast.BinOp):
        l, r = _linear(n.left, x), _linear(n.right, x)
        if l is None or r is None:
            return None
        if isinstance(n.op, ast.Add):
            return l[0] + r[0], l[1] + r[1]
        if isinstance(n.op, ast.Sub):
            return l[0] - r[0], l[1] - r[1]
        if isinstance(n.op, ast.Mult):
            if l[0] and r[0]:
                return None
            return l[0] * r[1] + r[0] * l[1], l[1] * r[1]
    return None


# --------------------------------------------------------------------------- generation


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class _Gen:
    spec: FfiSpec
    kernel: Kernel
    lines: list = field(default_factory=list)
    env: dict = field(default_factory=dict)  # symbol -> C++ variable

    def emit(self, s: str, depth: int = 1):
        self.lines.append("  " * depth + s)

    def fail(self, kind: str, what: str, index: int, expected: str, got: str | None = None):
        msg = _cstr(f"Invalid {what} on argument #{index} when calling ")[:-1] + '" << kv_sig << ' + \
            _cstr(f": expected {expected}")
        if got is not None:
            msg += f' << ", got " << {got}'
        return f"TVM_FFI_THROW({kind}) << {msg};"

    def tensor_checks(self, index: int, a: TensorArg, deferred: list):
        t = a.name
        r = dtypes.dtype(a.dtype)
        code, bits = r.dlpack, r.bits
        self.emit(f"if ({t}.ndim() != {len(a.shape)}) "
                  + self.fail("ValueError", f"{t}.ndim", index, f"{t}.ndim to be {len(a.shape)}",
                              f"{t}.ndim()"))
        self.emit(f"if (!({t}.dtype().code == {code} && {t}.dtype().bits == {bits} && "
                  f"{t}.dtype().lanes == 1)) "
                  + self.fail("TypeError", f"{t}.dtype", index, f"{t}.dtype to be {a.dtype}",
                              f"{t}.dtype()"))
        for d, dim in enumerate(a.shape):
            deferred.append((index, a, d, _parse(dim)))

    def shape_checks(self, deferred: list):
        pending = list(deferred)
        progress = True
        while pending and progress:
            progress = False
            rest = []
            for index, a, d, e in pending:
                free = _symbols(e) - set(self.env)
                if not free:
                    self.check_equal(index, a, d, e)
                    progress = True
                elif len(free) == 1:
                    x = next(iter(free))
                    lin = _linear(e, x)
                    if lin is None or lin[0] == 0:
                        rest.append((index, a, d, e))
                        continue
                    self.bind(index, a, d, e, x, *lin)
                    progress = True
                else:
                    rest.append((index, a, d, e))
            pending = rest
        if pending:
            index, a, d, e = pending[0]
            raise LoweringError(f"cannot bind the symbols of {a.name}.shape[{d}] = {_pretty(e)}: "
                                f"give each symbol a dimension of the form a * x + b")

    def check_equal(self, index, a, d, e):
        t = a.name
        v = f"{t}.shape()[{d}]"
        val = _cpp(e, self.env)
        if isinstance(e, ast.Constant):
            exp = f"{t}.shape[{d}] to be {e.value}"
            self.emit(f"if ({v} != {val}) " + self.fail("ValueError", f"{t}.shape[{d}]", index,
                                                         exp, v))
        else:
            exp = f"{t}.shape[{d}] to be {_pretty(e)} (= "
            msg = (_cstr(f"Invalid {t}.shape[{d}] on argument #{index} when calling ")
                   + " << kv_sig << " + _cstr(f": expected {exp}") + f" << {val} << "
                   + _cstr("), got ") + f" << {v}")
            self.emit(f"if ({v} != {val}) TVM_FFI_THROW(ValueError) << {msg};")

    def bind(self, index, a, d, e, x, coef, off):
        t = a.name
        v = f"{t}.shape()[{d}]"
        var = f"kv_sym_{x}"
        what = f"{t}.shape[{d}]"
        if off:
            lo = off if coef > 0 else None
            if lo is not None:
                self.emit(f"if ({v} < {off}) " + self.fail("ValueError", what, index,
                                                            f"{what} to be at least {off} "
                                                            f"(it is {_pretty(e)})", v))
        if abs(coef) != 1:
            shifted = f"({v} - {off})" if off else v
            exp = (f"{what} to be divisible by {abs(coef)}" if not off else
                   f"{what} - {off} to be divisible by {abs(coef)} (it is {_pretty(e)})")
            self.emit(f"if ({shifted} % {abs(coef)} != 0) "
                      + self.fail("ValueError", what, index, exp, v))
        num = f"({v} - {off})" if off else v
        self.emit(f"const int64_t {var} = {num} / {coef};" if coef != 1 else
                  f"const int64_t {var} = {num};")
        if coef < 0:
            self.emit(f"if ({var} < 0) " + self.fail("ValueError", what, index,
                                                      f"{what} to give {x} >= 0", v))
        self.env[x] = var

    def generate(self, module: Module) -> str:
        spec, k = self.spec, self.kernel
        if len(spec.params) != len(k.params):
            raise LoweringError(f"{spec.name}: {len(spec.params)} parameter bindings for "
                                f"{len(k.params)} kernel parameters", k.loc)
        tensors = {a.name: a for a in spec.args if isinstance(a, TensorArg)}
        for a in spec.args:
            if not a.name.isidentifier() or a.name in _C_KEYWORDS or a.name.startswith("kv_"):
                raise LoweringError(f"{spec.name}: argument name {a.name!r} is not usable as a "
                                    f"C++ identifier")
        for a in spec.args:
            if isinstance(a, TensorArg) and dtypes.lookup(a.dtype) is None:
                raise LoweringError(f"{spec.name}: unknown dtype {a.dtype!r} of {a.name}")
            if isinstance(a, ScalarArg) and a.dtype not in SCALAR_TYPES:
                raise LoweringError(f"{spec.name}: unknown scalar dtype {a.dtype!r} of {a.name}")
        sig_args = []
        for a in spec.args:
            if isinstance(a, TensorArg):
                sig_args.append(f"tvm::ffi::TensorView {a.name}")
            else:
                sig_args.append(f"{SCALAR_TYPES[a.dtype][0]} {a.name}")
        fn = f"kv_ffi_{spec.name}"
        self.lines.append(f"static void {fn}({', '.join(sig_args)}) {{")
        self.emit(f"static const char* kv_sig = {_cstr(spec.signature())};")
        # scalars bind their names first
        for index, a in enumerate(spec.args):
            if isinstance(a, ScalarArg):
                rng = SCALAR_TYPES[a.dtype][1]
                if rng:
                    self.emit(f"if ({a.name} < {rng[0]} || {a.name} > {rng[1]}) "
                              + self.fail("ValueError", a.name, index,
                                          f"{a.name} to fit in {a.dtype}", a.name))
                if a.dtype.startswith(("int", "uint")):
                    self.env[a.name] = a.name
        deferred: list = []
        for index, a in enumerate(spec.args):
            if isinstance(a, TensorArg):
                self.tensor_checks(index, a, deferred)
        self.shape_checks(deferred)
        first = None
        for index, a in enumerate(spec.args):
            if not isinstance(a, TensorArg):
                continue
            t = a.name
            self.emit(f"if (!{t}.IsContiguous()) "
                      + self.fail("ValueError", t, index, f"{t} to be contiguous"))
            self.emit(f"if ({t}.device().device_type != kDLCUDA) "
                      + self.fail("ValueError", f"{t}.device", index,
                                  f"{t} to be a CUDA tensor",
                                  f"kv_device_name({t}.device().device_type)"))
            if first is None:
                first = (index, t)
            else:
                self.emit(f"if ({t}.device().device_id != {first[1]}.device().device_id) "
                          + self.fail("ValueError", f"{t}.device", index,
                                      f"{t} to be on the same device as {first[1]}",
                                      f"{t}.device().device_id"))
        dev = f"{first[1]}.device().device_id" if first else "0"
        self.emit(f"tvm::ffi::CUDADeviceGuard kv_guard({dev});")
        self.emit("cudaStream_t kv_stream = static_cast<cudaStream_t>("
                  f"TVMFFIEnvGetStream(kDLCUDA, {dev}));")
        # kernel arguments
        structs_needed = []
        call_args = []
        for i, (p, b) in enumerate(zip(k.params, spec.params)):
            var = f"kv_arg{i}"
            if isinstance(b, TensorMap):
                if p.array is None or p.size != 128:
                    raise LoweringError(f"{spec.name}: parameter #{i} ({p.name}) is not a "
                                        f"128-byte tensor map", k.loc)
                if b.buffer not in tensors:
                    raise LoweringError(f"{spec.name}: tensor map of parameter #{i} names "
                                        f"unknown tensor {b.buffer!r}")
                ta = tensors[b.buffer]
                st = bytes_struct(p.size, p.align or 1)
                structs_needed.append(st)
                self.tensor_map(i, var, st, ta, b)
            elif isinstance(b, str) and b in tensors:
                if p.array is not None:
                    raise LoweringError(f"{spec.name}: parameter #{i} ({p.name}) is a byte "
                                        f"array, not a pointer", k.loc)
                ct = value_ctype(p.type)
                self.emit(f"{ct} {var} = ({ct})reinterpret_cast<uintptr_t>({b}.data_ptr());")
            else:
                if p.array is not None:
                    raise LoweringError(f"{spec.name}: parameter #{i} ({p.name}) needs a "
                                        f"TensorMap binding", k.loc)
                ct = value_ctype(p.type)
                scal = next((a for a in spec.args if isinstance(a, ScalarArg) and a.name == b),
                            None)
                if scal is not None and scal.dtype.startswith("float"):
                    self.emit(f"{ct} {var} = ({ct}){b};")
                else:
                    self.emit(f"{ct} {var} = ({ct}){_cpp(_parse(b), self.env)};")
            call_args.append(var)
        g = [_cpp(_parse(x), self.env) for x in spec.grid]
        bl = [_cpp(_parse(x), self.env) for x in spec.block]
        cl = [_cpp(_parse(x), self.env) for x in spec.cluster]
        smem = _cpp(_parse(spec.shared_bytes), self.env)
        self.emit("cudaLaunchConfig_t kv_cfg = {};")
        self.emit(f"kv_cfg.gridDim = dim3((unsigned){g[0]}, (unsigned){g[1]}, (unsigned){g[2]});")
        self.emit(f"kv_cfg.blockDim = dim3((unsigned){bl[0]}, (unsigned){bl[1]}, (unsigned){bl[2]});")
        self.emit(f"kv_cfg.dynamicSmemBytes = (size_t){smem};")
        self.emit("kv_cfg.stream = kv_stream;")
        self.emit("cudaLaunchAttribute kv_attr[1];")
        self.emit("kv_attr[0].id = cudaLaunchAttributeClusterDimension;")
        self.emit(f"kv_attr[0].val.clusterDim.x = (unsigned){cl[0]};")
        self.emit(f"kv_attr[0].val.clusterDim.y = (unsigned){cl[1]};")
        self.emit(f"kv_attr[0].val.clusterDim.z = (unsigned){cl[2]};")
        fixed = k.directive("reqnctapercluster")
        if fixed:
            # compile-time cluster dims (__cluster_dims__) cannot be set again at launch
            dims = tuple(int(x) for x in fixed) + (1,) * (3 - len(fixed))
            given = tuple(spec.cluster)
            if given not in (dims, (1, 1, 1)) and given != tuple(str(x) for x in dims):
                raise LoweringError(f"{spec.name}: launch cluster {given} differs from the "
                                    f"kernel's .reqnctapercluster {dims}", k.loc)
            self.emit("kv_cfg.attrs = kv_attr; kv_cfg.numAttrs = 0;  // cluster dims fixed "
                      "by the kernel")
        else:
            self.emit(f"kv_cfg.attrs = kv_attr; kv_cfg.numAttrs = ({cl[0]} * {cl[1]} * {cl[2]} "
                      f"> 1) ? 1 : 0;")
        self.emit("if (kv_cfg.dynamicSmemBytes > 48 * 1024) {")
        self.emit(f"TVM_FFI_CHECK_CUDA_ERROR(cudaFuncSetAttribute({k.name}, "
                  "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kv_cfg.dynamicSmemBytes));", 2)
        self.emit("}")
        self.emit(f"TVM_FFI_CHECK_CUDA_ERROR(cudaLaunchKernelEx(&kv_cfg, {k.name}"
                  + "".join(f", {a}" for a in call_args) + "));")
        self.lines.append("}")
        self.lines.append(f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({spec.name}, {fn});")
        return "\n".join(self.lines) + "\n"

    def tensor_map(self, i: int, var: str, struct: str, ta: TensorArg, b: TensorMap):
        t = ta.name
        rank = len(ta.shape)
        if len(b.box) != rank:
            raise LoweringError(f"{self.spec.name}: tensor map box {b.box} has rank {len(b.box)}, "
                                f"{t} has rank {rank}")
        if b.swizzle not in SWIZZLES:
            raise LoweringError(f"{self.spec.name}: unknown swizzle {b.swizzle!r}")
        r = dtypes.dtype(ta.dtype)
        if r.tmap is None:
            raise LoweringError(f"{self.spec.name}: no tensor-map type for {ta.dtype}")
        esize = r.itemsize
        self.emit(f"{struct} {var};")
        self.emit("{")
        self.emit(f"cuuint64_t dims[{rank}], strides[{max(rank - 1, 1)}];", 2)
        self.emit(f"cuuint32_t box[{rank}], estr[{rank}];", 2)
        for d in range(rank):
            self.emit(f"dims[{d}] = (cuuint64_t){t}.shape()[{rank - 1 - d}]; "
                      f"box[{d}] = {int(b.box[rank - 1 - d])}; estr[{d}] = 1;", 2)
        for d in range(rank - 1):
            self.emit(f"strides[{d}] = (cuuint64_t){t}.stride({rank - 2 - d}) * {esize};", 2)
        self.emit("CUtensorMap kv_map;", 2)
        self.emit(f"CUresult r = kv_encode_tiled()(&kv_map, {r.tmap_enum}, {rank}, "
                  f"{t}.data_ptr(), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, "
                  f"{SWIZZLES[b.swizzle]}, CU_TENSOR_MAP_L2_PROMOTION_NONE, "
                  "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);", 2)
        self.emit("if (r != CUDA_SUCCESS) TVM_FFI_THROW(RuntimeError) << "
                  f"\"cuTensorMapEncodeTiled failed for parameter #{i} over {t}: error \" << (int)r;",
                  2)
        self.emit(f"static_assert(sizeof(kv_map) == sizeof({var}), \"tensor map size\");", 2)
        self.emit(f"memcpy(&{var}, &kv_map, sizeof(kv_map));", 2)
        self.emit("}")


FFI_PRELUDE = """\
#include <cstdint>
#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/base.h>
#include <tvm/ffi/extra/cuda/device_guard.h>

inline int64_t kv_ceildiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline const char* kv_device_name(int t) {
  switch (t) {
    case kDLCPU: return "a cpu tensor";
    case kDLCUDA: return "a cuda tensor";
    case kDLCUDAHost: return "a cuda_host tensor";
    case kDLCUDAManaged: return "a cuda_managed tensor";
    case kDLROCM: return "a rocm tensor";
    case kDLMetal: return "a metal tensor";
    default: return "a tensor on another device type";
  }
}
typedef CUresult (*kv_encode_tiled_t)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                      const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                      const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline kv_encode_tiled_t kv_encode_tiled() {
  static kv_encode_tiled_t fn = nullptr;
  if (fn == nullptr) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    TVM_FFI_CHECK_CUDA_ERROR(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                              cudaEnableDefault, &q));
    if (p == nullptr || q != cudaDriverEntryPointSuccess)
      TVM_FFI_THROW(RuntimeError) << "cuTensorMapEncodeTiled is not available from the driver";
    fn = reinterpret_cast<kv_encode_tiled_t>(p);
  }
  return fn;
}
"""


def ffi_source(module: Module, kernel: Kernel | str, spec: FfiSpec) -> str:
    """One CUDA translation unit: the lowered kernel and its exported TVM-FFI wrapper."""
    if isinstance(kernel, str):
        kernel = module.kernel(kernel)
    wrapper = _Gen(spec, kernel).generate(module)
    return FFI_PRELUDE + "\n" + lower_kernel(module, kernel) + "\n" + wrapper


def load_ffi(module: Module, kernel: Kernel | str, spec: FfiSpec, build_directory: str | None = None,
             arch: str = ARCH):
    """Build the wrapper with ``tvm_ffi.cpp.load_inline`` (nvcc) and load it; returns the
    ``tvm_ffi.Module`` whose attribute ``spec.name`` is the checked launcher."""
    import tvm_ffi.cpp

    src = ffi_source(module, kernel, spec)
    major, minor = arch[3:].rstrip("a"), arch.endswith("a")
    arch_list = f"{major[:-1]}.{major[-1]}{'a' if minor else ''}"
    old = os.environ.get("TVM_FFI_CUDA_ARCH_LIST")
    os.environ["TVM_FFI_CUDA_ARCH_LIST"] = arch_list
    ldflags = [f for d in _cudart_dirs() for f in (f"-L{d}", f"-Wl,-rpath,{d}")]
    try:
        return tvm_ffi.cpp.load_inline(name=f"kv_{spec.name}", cuda_sources=src,
                                       extra_cuda_cflags=list(NVCC_FLAGS),
                                       extra_ldflags=ldflags,
                                       build_directory=build_directory, backend="cuda")
    finally:
        if old is None:
            os.environ.pop("TVM_FFI_CUDA_ARCH_LIST", None)
        else:
            os.environ["TVM_FFI_CUDA_ARCH_LIST"] = old


def _cudart_dirs() -> list[str]:
    """Directories holding ``libcudart.so`` next to the nvcc on PATH (some installs keep it
    in ``lib`` rather than ``lib64``, or reach nvcc through a wrapper script)."""
    import glob
    import shutil

    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        homes.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
        try:
            with open(nvcc, errors="replace") as f:
                head = f.read(4096)
            import re

            m = re.search(r"(/\S+)/bin/nvcc", head)
            if m:
                homes.append(m.group(1))
        except OSError:
            pass
    homes += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"))
    out = []
    for h in homes:
        if not h:
            continue
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            d = os.path.join(h, sub)
            if os.path.exists(os.path.join(d, "libcudart.so")) and d not in out:
                out.append(d)
        if out:
            break
    return out

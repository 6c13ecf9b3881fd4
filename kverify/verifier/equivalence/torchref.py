"""A PyTorch function as the reference of ``kverify equiv`` (``--ref torch:MODULE:FN``, or a callable
passed to ``kverify.equiv``).

Owns: loading the function, binding its parameters to the candidate's launch (by name: a
parameter ``x`` takes the buffer or scalar argument whose CUDA name, PTX name or position is
``x``, or the one ``--bind x=KEY`` names), tracing it with ``torch.fx``
(``make_fx``: the ATen operators it runs, with the Python line of each) on inputs shaped like
the candidate's buffers, evaluating the traced graph over the ``real`` normal forms of
:mod:`realterm` (one term per output element, the same atoms as the kernels':
``rsqrt(p) = inv(sqrt(p))``, ``exp(x) = ex2(x*log2(e))`` (realterm snaps the compilers' roundings of log2(e)), casts to
f16/bf16 as ``round`` atoms), and running the function on concrete inputs (CPU) to confirm a
counterexample or for the differential-testing fallback.

The function returns one tensor (the candidate's single output buffer) or a dict
``{name: tensor}`` keyed like its parameters. Each result must have as many elements as the
buffer (compared in row-major order). An ATen operator outside :data:`SUPPORTED` makes the
verdict ``unknown`` (naming the operator and the Python line), then testing.

torch is imported only when a torch reference is used.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import math
import os
import sys
from fractions import Fraction

import numpy as np

from kverify.launch import lookup, param_key
from kverify.launch.dtypes import np_dtype
from kverify.semantics.ir import KernelError
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Loc

from . import realterm as R
from .algebra import ModelUnsupported

PREFIX = "torch:"


class TorchUnsupported(Unsupported):
    """An operator (or a use of one) the term evaluator does not model; ``instr`` carries the
    Python line (``.loc``) so that the message names it."""

    def __init__(self, message, loc=None):
        super().__init__(message, _At(loc) if loc is not None else None)


class _At:
    def __init__(self, loc):
        self.loc = loc


# --------------------------------------------------------------------------- loading


def is_torch_ref(ref) -> bool:
    return callable(ref) or (isinstance(ref, str) and ref.startswith(PREFIX))


def load_function(text: str):
    """``torch:MODULE:FN`` -> the function. MODULE is a file (``tests/zoo/layernorm/ref.py``) or a
    dotted module importable from the current directory."""
    body = text[len(PREFIX):]
    mod, sep, fn = body.rpartition(":")
    if not sep or not mod or not fn:
        raise KernelError(f"--ref {text!r}: expected torch:MODULE:FN (MODULE a .py file or a dotted module)",
                          "<command line>", 1, 1)
    _need_torch(text)
    try:
        if mod.endswith(".py") or os.sep in mod or "/" in mod:
            if not os.path.isfile(mod):
                raise KernelError(f"--ref {text!r}: no such file {mod!r}", "<command line>", 1, 1)
            name = "kverify_torchref_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(mod))
            spec = importlib.util.spec_from_file_location(name, mod)
            m = importlib.util.module_from_spec(spec)
            sys.modules[name] = m
            spec.loader.exec_module(m)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            m = importlib.import_module(mod)
    except KernelError:
        raise
    except SyntaxError as e:
        raise KernelError(f"syntax error: {e.msg}", e.filename or mod, e.lineno or 0, e.offset or 0) from None
    except Exception as e:  # noqa: BLE001 - the user's module failed to import: say where
        f, ln = _user_frame(e, mod)
        raise KernelError(f"importing {mod}: {type(e).__name__}: {e}", f, ln, 1) from None
    f = getattr(m, fn, None)
    if f is None or not callable(f):
        raise KernelError(f"--ref {text!r}: {mod} has no function {fn!r}", getattr(m, "__file__", mod) or mod, 1, 1)
    return f


def _need_torch(what):
    try:
        import torch  # noqa: F401
    except ImportError:
        raise KernelError(f"{what}: a torch reference needs PyTorch (pip install torch)", "<command line>", 1, 1) \
            from None


def _user_frame(exc, default):
    tb = exc.__traceback__
    f, ln = default, 0
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if "site-packages" not in fn and "importlib" not in fn and "kverify" not in fn:
            f, ln = fn, tb.tb_lineno
        tb = tb.tb_next
    return f, ln


def parse_bind(text) -> dict:
    """``x=0,weight=w_ptr`` (or a dict) -> {function parameter: kernel parameter key}."""
    if not text:
        return {}
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    out = {}
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        k, eq, v = part.partition("=")
        if not eq or not k or not v:
            raise KernelError(f"--bind expects NAME=PARAM[,NAME=PARAM...], got {part!r}", "<command line>", 1, 1)
        out[k] = v
    return out


def _src(fn):
    try:
        path = inspect.getsourcefile(fn) or "<python>"
        line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        path, line = getattr(getattr(fn, "__code__", None), "co_filename", "<python>"), 0
    return _rel(path), line


def _rel(path):
    try:
        r = os.path.relpath(path)
        return r if not r.startswith("..") else path
    except ValueError:
        return path


# --------------------------------------------------------------------------- the reference side


class _RunLike:
    def __init__(self, status, outputs, findings=()):
        self.status, self.outputs, self.findings = status, outputs, list(findings)


class TorchReference:
    """The reference side of a comparison: quacks like ``engine.Side`` (the candidate's kernel
    and launch, so buffers pair by name with the candidate's) and adds ``symbolic_run`` and
    ``run_reference``."""

    def __init__(self, fn, cand, bind=None, text=None):
        self.fn = fn
        self.text = text or f"{PREFIX}{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        self.path, self.line = _src(fn)
        self.module, self.kernel, self.spec = cand.module, cand.kernel, cand.spec
        self.launch_path = None
        self.cand_path = cand.path
        self.bind = parse_bind(bind)
        self._bind()

    @property
    def name(self):
        return getattr(self.fn, "__qualname__", str(self.fn))

    def scope_text(self):
        return f"torch reference {self.text} ({self.path}:{self.line}) on the candidate's buffers"

    # ------------------------------------------------------------------ binding
    def _bind(self):
        k, spec = self.kernel, self.spec
        keys = {}
        for i, p in enumerate(k.params):
            for key in (p.source_name, p.name, str(i)):
                if key is not None:
                    keys.setdefault(key, i)
        self.buffers = {}  # kernel key -> (dtype, shape)
        for i, p in enumerate(k.params):
            b = lookup(spec.buffers, k, i)
            if b is not None:
                self.buffers[param_key(k, i)] = (b["dtype"], tuple(int(s) for s in b["shape"]))
        outs = [self._key(o, keys) for o in (spec.outputs or [])]
        self.outputs = [o for o in outs if o is not None]
        try:
            sig = inspect.signature(self.fn)
        except (TypeError, ValueError):
            raise KernelError(f"{self.text}: cannot read the function's parameters", self.path, self.line, 1) from None
        self.params = []  # (python name, "buffer"|"scalar", kernel key, value)
        for name, prm in sig.parameters.items():
            if prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
                continue
            target = self.bind.get(name, name)
            i = keys.get(target)
            if i is None:
                if prm.default is not prm.empty:
                    continue
                avail = [f"{param_key(k, j)}" + (f" (position {j})" if param_key(k, j) != str(j) else "")
                         for j in range(len(k.params))]
                raise KernelError(f"parameter {name!r} of {self.name} matches no parameter of kernel {k.name} "
                                  f"({', '.join(avail)}); bind it with --bind {name}=PARAM",
                                  self.path, self.line, 1)
            key = param_key(k, i)
            if key in self.buffers:
                self.params.append((name, "buffer", key, None))
            else:
                v = lookup(spec.args, k, i)
                if v is None:
                    raise KernelError(f"parameter {name!r} of {self.name}: kernel parameter {key} has no value in "
                                      f"the launch", self.path, self.line, 1)
                self.params.append((name, "scalar", key, v))
        self._keys = keys
        if not self.outputs:
            # no outputs listed in the launch: the buffers the function does not take are its outputs
            taken = {key for _, kind, key, _ in self.params if kind == "buffer"}
            self.outputs = [k for k in self.buffers if k not in taken]
            self.spec = dataclasses.replace(spec, outputs=tuple(self.outputs))

    def _key(self, name, keys=None):
        keys = keys or self._keys
        i = keys.get(self.bind.get(name, name))
        return param_key(self.kernel, i) if i is not None else None

    def _outputs_of(self, result):
        """The function's result -> {kernel key: value}."""
        if isinstance(result, dict):
            out = {}
            for name, v in result.items():
                key = self._key(str(name))
                if key is None or key not in self.buffers:
                    raise KernelError(f"{self.name} returns {name!r}, which names no buffer of kernel "
                                      f"{self.kernel.name}", self.path, self.line, 1)
                out[key] = v
            missing = [o for o in self.outputs if o not in out]
            if missing:
                raise KernelError(f"{self.name} returns no value for output buffer(s) {', '.join(missing)}",
                                  self.path, self.line, 1)
            return out
        if isinstance(result, (tuple, list)):
            raise KernelError(f"{self.name} returns a {type(result).__name__}: return one tensor or a dict "
                              f"{{buffer: tensor}}", self.path, self.line, 1)
        outs = self.outputs or []
        if len(outs) != 1:
            raise KernelError(f"{self.name} returns one tensor but kernel {self.kernel.name}'s launch has "
                              f"{len(outs)} outputs ({', '.join(outs) or 'none listed'}): return a dict",
                              self.path, self.line, 1)
        return {outs[0]: result}

    # ------------------------------------------------------------------ concrete runs
    def _kwargs(self, arrays):
        import torch

        kw = {}
        for name, kind, key, v in self.params:
            if kind == "scalar":
                kw[name] = v
                continue
            dt, shape = self.buffers[key]
            a = arrays.get(key)
            if a is None:
                a = np.zeros(shape, np_dtype(dt))
            kw[name] = _to_torch(np.array(a, copy=True).reshape(shape), dt, torch)
        return kw

    def run_reference(self, inputs):
        """The function on concrete inputs (CPU): ``outputs`` keyed like the candidate's buffers."""
        import torch

        outs = {k: np.array(v, copy=True) for k, v in inputs.items()}
        try:
            with torch.no_grad():
                res = self.fn(**self._kwargs(inputs))
            res = self._outputs_of(res)
        except KernelError:
            raise
        except Exception as e:  # noqa: BLE001 - the function failed on these inputs
            return _RunLike(f"error: {type(e).__name__}: {e}", outs)
        for key, t in res.items():
            dt, shape = self.buffers[key]
            outs[key] = _from_torch(t, dt, shape, torch)
        return _RunLike("complete", outs)

    # ------------------------------------------------------------------ terms
    def symbolic_run(self, alg, names, tag, max_steps=None):
        if alg.model != "real":
            raise ModelUnsupported(f"a torch reference has no bit-level semantics here (its CPU kernels pick their "
                                   f"own reduction order, vector width and internal precision); it is compared "
                                   f"under the real model only")
        graph, inputs, out_spec = self.trace()
        ev = Evaluator(alg, self.path)
        env = {}
        for node, (name, key) in zip([n for n in graph.nodes if n.op == "placeholder"], inputs):
            dt, shape = self.buffers[key]
            n = int(np.prod(shape)) if shape else 1
            arr = np.empty(n, dtype=object)
            nm = names.get(key, key)
            for i in range(n):
                arr[i] = alg.input_value(f"{nm}[{i}]", dt, 0)
            env[node] = TT(arr.reshape(shape), _torch_dtype(dt))
        out = ev.run(graph, env)
        result = self._outputs_of(out)
        return _TermsResult(self, names, result, ev, alg)

    def trace(self):
        """make_fx (fake tensors of the buffers' shapes and dtypes, scalars as constants): the graph,
        the (python name, kernel key) of each tensor placeholder in order."""
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx

        try:
            from torch.fx.proxy import _register_stack_trace_anchor
            _register_stack_trace_anchor(self.fn)
        except Exception:  # noqa: BLE001 - private API: without it the lines are unknown
            pass
        tensors = [(n, key) for n, kind, key, _ in self.params if kind == "buffer"]
        scalars = {n: v for n, kind, _, v in self.params if kind == "scalar"}
        fn = self.fn

        def wrapped(*ts):
            return fn(**dict(zip([n for n, _ in tensors], ts)), **scalars)

        examples = []
        for _, key in tensors:
            dt, shape = self.buffers[key]
            examples.append(torch.zeros(shape, dtype=_torch_dtype(dt)))
        try:
            gm = make_fx(wrapped, tracing_mode="fake", record_stack_traces=True)(*examples)
        except KernelError:
            raise
        except Exception as e:  # noqa: BLE001 - data-dependent control flow, an error in the function
            f, ln = _user_frame(e, self.path)
            raise TorchUnsupported(f"torch.fx could not trace {self.name}: {type(e).__name__}: "
                                   f"{str(e).splitlines()[0] if str(e) else ''}", Loc(_rel(f), ln)) from None
        return gm.graph, tensors, None


class _TermsResult:
    """What the engine reads from a symbolic run: ``buffers`` and ``output_terms()``."""

    def __init__(self, ref, names, result, ev, alg):
        from .symexec import Buffer
        from kverify.launch import dtypes

        self.buffers = [Buffer(names.get(k, k), k, dt, shape, 0, dtypes.itemsize(dt))
                        for k, (dt, shape) in ref.buffers.items()]
        self._terms = {}
        for key, t in result.items():
            dt, shape = ref.buffers[key]
            if not isinstance(t, TT):
                raise TorchUnsupported(f"{ref.name} returns {type(t).__name__} for {key}, not a tensor",
                                       Loc(ref.path, ref.line))
            n = int(np.prod(shape)) if shape else 1
            if t.a.size != n:
                raise KernelError(f"{ref.name} returns {tuple(t.a.shape)} ({t.a.size} elements) for buffer {key} of "
                                  f"shape {shape} ({n} elements)", ref.path, ref.line, 1)
            flat = t.a.reshape(-1)
            narrow = _narrow(t.dtype, dt)
            vals = []
            for v in flat:
                if narrow and isinstance(v, R.Poly):
                    v = alg.A.round_to(narrow, v)
                vals.append((v, t.loc))
            self._terms[names.get(key, key)] = vals

    def output_terms(self):
        return self._terms

    def written_buffers(self) -> set:
        """The buffers the reference function returns (what it "stores to")."""
        return set(self._terms)


# --------------------------------------------------------------------------- dtypes


def _torch_dtype(dt):
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "int16": torch.int16,
            "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}.get(dt, torch.float32)


def _to_torch(a, dt, torch):
    if dt == "bfloat16":
        return torch.from_numpy(a.astype(np.uint16).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _from_torch(t, dt, shape, torch):
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(t)
    t = t.detach().cpu()
    n = int(np.prod(shape)) if shape else 1
    if t.numel() != n:
        raise ValueError(f"result has {t.numel()} elements, the buffer {n}")
    if dt == "bfloat16":
        return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().view(np.uint16).reshape(shape)
    return t.to(_torch_dtype(dt)).contiguous().numpy().reshape(shape).astype(np_dtype(dt))


_PREC = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def _dname(d):
    return str(d).replace("torch.", "")


def _narrow(src, dst):
    """The round-atom format when a value of torch dtype ``src`` is stored into a ``dst`` buffer."""
    s, d = _PREC.get(_dname(src)), _PREC.get(dst)
    if s and d and d < s:
        return {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}[dst]
    return None


# --------------------------------------------------------------------------- term tensors


class TT:
    """A tensor of terms: ``a`` a numpy object array of ``realterm`` values, ``dtype`` torch's,
    ``loc`` the Python line of the operator that produced it."""

    __slots__ = ("a", "dtype", "loc")

    def __init__(self, a, dtype, loc=None):
        self.a, self.dtype, self.loc = a, dtype, loc


LOG2E = R.LOG2E  # exp(x) = ex2(x*log2(e)); ex2 snaps every rounding of log2(e) to this one
LN2_F32 = Fraction(float(np.float32(math.log(2.0))))

#: The ATen operators the evaluator models (packet names, in-place and out variants included),
#: with what each becomes in the real normal forms. docs/equivalence.md has the table.
SUPPORTED = {
    "add": "a + alpha*b", "sub": "a - alpha*b", "rsub": "b - alpha*a", "mul": "a*b", "div": "a*inv(b) (no rounding_mode)",
    "neg": "-a", "reciprocal": "inv(a)", "exp": "ex2(a*log2e)", "exp2": "ex2(a)", "log": "lg2(a)*ln2_f32",
    "log2": "lg2(a)", "sqrt": "sqrt(a)", "rsqrt": "inv(sqrt(a))", "abs": "abs(a)", "maximum": "max(a, b)",
    "minimum": "min(a, b)", "clamp_min": "max(a, c)", "clamp_max": "min(a, c)", "clamp": "min(max(a, lo), hi)",
    "relu": "max(a, 0)", "tanh": "tanh(a)", "sin": "sin(a)", "cos": "cos(a)", "pow": "a**k, integer k; k = 0.5, -0.5",
    "square": "a*a", "mm": "sum_k a[i,k]*b[k,j]", "bmm": "batched mm", "addmm": "beta*c + alpha*(a@b)",
    "matmul": "mm/bmm", "dot": "sum a*b", "mv": "matrix-vector",
    "sum": "sum over dims (keepdim)", "mean": "sum/n", "amax": "max over dims", "amin": "min over dims",
    "max": "max over all, or (values, -) over a dim", "min": "as max",
    "_softmax": "ex2((x-max)*log2e) / sum", "softmax": "as _softmax",
    "_log_softmax": "x - max - lg2(sum ex2(...))*ln2_f32", "log_softmax": "as _log_softmax",
    "native_layer_norm": "(x-mean)*inv(sqrt(var+eps))*w+b, var = mean((x-mean)**2)",
    "where": "select on a constant condition", "masked_fill": "fill on a constant mask",
    "_to_copy": "cast: round_f16/round_bf16 atom when narrowing, identity when widening", "to": "as _to_copy",
    "view": "reshape", "_unsafe_view": "reshape", "reshape": "reshape", "transpose": "swap two dims", "t": "2-d transpose",
    "permute": "permute", "unsqueeze": "insert dim", "squeeze": "drop size-1 dims", "expand": "broadcast",
    "clone": "identity", "contiguous": "identity", "alias": "identity", "detach": "identity",
    "lift_fresh_copy": "identity", "slice": "slice", "select": "index one dim", "cat": "concatenate",
    "stack": "stack", "flatten": "reshape", "zeros": "constant", "ones": "constant", "full": "constant",
    "zeros_like": "constant", "ones_like": "constant", "full_like": "constant", "scalar_tensor": "constant",
    "arange": "constant", "tril": "zero above the diagonal", "triu": "zero below the diagonal",
    "lt": "comparison of constants", "le": "comparison of constants", "gt": "comparison of constants",
    "ge": "comparison of constants", "eq": "comparison of constants", "ne": "comparison of constants",
    "logical_not": "of constants", "bitwise_not": "of constants (bool)",
}


def _line(node):
    st = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not st:
        return None
    last = None
    for ln in st.splitlines():
        ln = ln.strip()
        if ln.startswith("File \""):
            try:
                f = ln.split('"')[1]
                n = int(ln.split("line ")[1].split(",")[0])
            except (IndexError, ValueError):
                continue
            last = (f, n)
    return Loc(_rel(last[0]), last[1]) if last else None


class Evaluator:
    """Evaluates a traced ATen graph over term tensors."""

    def __init__(self, alg, path):
        self.alg, self.A, self.path = alg, alg.A, path
        self.loc = None

    # ------------------------------------------------------------------ graph
    def run(self, graph, env):
        import torch.utils._pytree as pytree

        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return pytree.tree_map(lambda x: env[x] if hasattr(x, "op") else x, node.args[0])
            if node.op != "call_function":
                raise TorchUnsupported(f"graph node {node.op} {node.target}", _line(node))
            self.loc = _line(node)
            args = pytree.tree_map(lambda x: env[x] if hasattr(x, "op") else x, node.args)
            kwargs = pytree.tree_map(lambda x: env[x] if hasattr(x, "op") else x, node.kwargs)
            val = node.meta.get("val")
            if node.target is __import__("operator").getitem:
                env[node] = args[0][args[1]]
                continue
            name = _op_name(node.target)
            base = name[:-1] if name.endswith("_") and not name.endswith("__") else name  # add_ -> add (in place)
            h = getattr(self, "op_" + base.lstrip("_"), None) if base in SUPPORTED else None
            if h is None:
                raise TorchUnsupported(f"torch operator {node.target} is not in the supported table "
                                       f"(docs/equivalence.md)", self.loc)
            out = h(val, *args, **kwargs)
            out = self._stamp(out, val)
            env[node] = out
            if base != name and node.args and hasattr(node.args[0], "op"):  # in place: later reads see it
                env[node.args[0]] = out
        raise TorchUnsupported("the traced graph has no output")

    def _stamp(self, out, val):
        if isinstance(out, TT):
            if val is not None and hasattr(val, "dtype"):
                out.dtype = val.dtype
                if tuple(val.shape) != out.a.shape:
                    raise TorchUnsupported(f"internal: shape {out.a.shape} where torch has {tuple(val.shape)}",
                                           self.loc)
            out.loc = self.loc
        elif isinstance(out, tuple):
            out = tuple(self._stamp(o, v) if isinstance(o, TT) else o
                        for o, v in zip(out, val if isinstance(val, (tuple, list)) else [None] * len(out)))
        return out

    # ------------------------------------------------------------------ values
    def const(self, x, dtype=None):
        if isinstance(x, bool):
            return x
        if isinstance(x, int):
            return R.const(x)
        if isinstance(x, float):
            if math.isinf(x):
                return R.POS_INF if x > 0 else R.NEG_INF
            if math.isnan(x):
                raise TorchUnsupported("a NaN constant (real model)", self.loc)
            if dtype is None or _dname(dtype) != "float64":  # torch computes with f32 opmath
                x = float(np.float32(x))
            return R.const(Fraction(x))
        raise TorchUnsupported(f"a constant of type {type(x).__name__}", self.loc)

    def arr(self, x, val=None):
        if isinstance(x, TT):
            return x.a
        dt = getattr(val, "dtype", None)
        a = np.empty((), dtype=object)
        a[()] = self.const(x, dt)
        return a

    def tt(self, a, val=None):
        return TT(np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a, getattr(val, "dtype", None))

    def ew(self, f, val, *xs):
        arrs = [self.arr(x, val) for x in xs]
        out = np.frompyfunc(f, len(arrs), 1)(*arrs)
        if not isinstance(out, np.ndarray):
            o = np.empty((), dtype=object)
            o[()] = out
            out = o
        return self.tt(out, val)

    # scalar functions on terms
    def _add(self, a, b):
        if isinstance(a, R.Poly) and isinstance(b, R.Poly):
            return self.A.add(a, b)
        return self.alg._addsub(a, b, False)

    def _mul(self, a, b):
        if isinstance(a, R.Poly) and isinstance(b, R.Poly):
            return self.A.mul(a, b)
        return self.alg._mul(a, b)

    def _neg(self, a):
        if isinstance(a, R.Inf):
            return R.NEG_INF if a.sign > 0 else R.POS_INF
        return self.A.neg(a)

    def _inv(self, a):
        try:
            return self.alg._inv(a)
        except R.RealUnsupported as e:
            raise TorchUnsupported(str(e), self.loc) from None

    def _fin(self, a, what):
        if isinstance(a, R.Inf):
            raise TorchUnsupported(f"{what} of an infinity (real model)", self.loc)
        return a

    def _ex2(self, a):
        if isinstance(a, R.Inf):
            return R.ZERO if a.sign < 0 else R.POS_INF
        return self.A.ex2(a)

    def _exp(self, a):
        if isinstance(a, R.Inf):
            return R.ZERO if a.sign < 0 else R.POS_INF
        return self.A.ex2(self.A.scale(a, LOG2E))

    def _sqrt(self, a):
        a = self._fin(a, "sqrt")
        if a.is_const() and a.const() >= 0:
            c = a.const()
            n, d = math.isqrt(c.numerator), math.isqrt(c.denominator)
            if n * n == c.numerator and d * d == c.denominator:
                return R.const(Fraction(n, d))
        return self.A.fn("sqrt", a)

    def _lg2(self, a):
        return self.A.fn("lg2", self._fin(a, "log"))

    def _max(self, *xs):
        return self.A.maxmin("max", list(xs))

    def _min(self, *xs):
        return self.A.maxmin("min", list(xs))

    # ------------------------------------------------------------------ elementwise
    def _alpha(self, b, alpha, val):
        if alpha is None or alpha == 1:
            return b
        return self.ew(self._mul, val, b, alpha)

    def op_add(self, val, a, b, alpha=None, **kw):
        return self.ew(self._add, val, a, self._alpha(b, alpha, val))

    def op_sub(self, val, a, b, alpha=None, **kw):
        return self.ew(lambda x, y: self._add(x, self._neg(y)), val, a, self._alpha(b, alpha, val))

    def op_rsub(self, val, a, b, alpha=None, **kw):
        return self.ew(lambda x, y: self._add(y, self._neg(x)), val, self._alpha(a, alpha, val), b)

    def op_mul(self, val, a, b, **kw):
        return self.ew(self._mul, val, a, b)

    def op_div(self, val, a, b, rounding_mode=None, **kw):
        if rounding_mode is not None:
            raise TorchUnsupported(f"div with rounding_mode={rounding_mode!r}", self.loc)
        return self.ew(lambda x, y: self._mul(x, self._inv(y)), val, a, b)

    def op_neg(self, val, a, **kw):
        return self.ew(self._neg, val, a)

    def op_reciprocal(self, val, a, **kw):
        return self.ew(self._inv, val, a)

    def op_exp(self, val, a, **kw):
        return self.ew(self._exp, val, a)

    def op_exp2(self, val, a, **kw):
        return self.ew(self._ex2, val, a)

    def op_log(self, val, a, **kw):
        return self.ew(lambda x: self.A.scale(self._lg2(x), LN2_F32), val, a)

    def op_log2(self, val, a, **kw):
        return self.ew(self._lg2, val, a)

    def op_sqrt(self, val, a, **kw):
        return self.ew(self._sqrt, val, a)

    def op_rsqrt(self, val, a, **kw):
        return self.ew(lambda x: self._inv(self._sqrt(x)), val, a)

    def op_abs(self, val, a, **kw):
        def f(x):
            if isinstance(x, R.Inf):
                return R.POS_INF
            return R.const(abs(x.const())) if x.is_const() else self.A.fn("abs", x)
        return self.ew(f, val, a)

    def op_maximum(self, val, a, b, **kw):
        return self.ew(self._max, val, a, b)

    def op_minimum(self, val, a, b, **kw):
        return self.ew(self._min, val, a, b)

    def op_clamp_min(self, val, a, m, **kw):
        return self.ew(self._max, val, a, m)

    def op_clamp_max(self, val, a, m, **kw):
        return self.ew(self._min, val, a, m)

    def op_clamp(self, val, a, lo=None, hi=None, **kw):
        out = a
        if lo is not None:
            out = self.ew(self._max, val, out, lo)
        if hi is not None:
            out = self.ew(self._min, val, out, hi)
        return out

    def op_relu(self, val, a, **kw):
        return self.ew(lambda x: self._max(x, R.ZERO), val, a)

    def _fn1(self, name):
        return lambda val, a, **kw: self.ew(lambda x: self.A.fn(name, self._fin(x, name)), val, a)

    def op_tanh(self, val, a, **kw):
        return self._fn1("tanh")(val, a)

    def op_sin(self, val, a, **kw):
        return self._fn1("sin")(val, a)

    def op_cos(self, val, a, **kw):
        return self._fn1("cos")(val, a)

    def op_pow(self, val, a, e, **kw):
        if isinstance(e, TT) or not isinstance(a, TT):
            raise TorchUnsupported("pow with a tensor exponent", self.loc)
        if float(e) == 0.5:
            return self.op_sqrt(val, a)
        if float(e) == -0.5:
            return self.op_rsqrt(val, a)
        if float(e) != int(e):
            raise TorchUnsupported(f"pow with exponent {e}", self.loc)
        k = int(e)

        def f(x):
            r = R.const(1)
            for _ in range(abs(k)):
                r = self._mul(r, x)
            return self._inv(r) if k < 0 else r
        return self.ew(f, val, a)

    def op_square(self, val, a, **kw):
        return self.ew(lambda x: self._mul(x, x), val, a)

    # ------------------------------------------------------------------ reductions
    def _dims(self, a, dim):
        nd = a.ndim
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            return tuple(range(nd))
        if isinstance(dim, int):
            dim = [dim]
        return tuple(sorted(d % nd if nd else 0 for d in dim))

    def _reduce(self, x, dim, keepdim, f):
        a = x.a
        dims = self._dims(a, dim)
        rest = [d for d in range(a.ndim) if d not in dims]
        moved = np.transpose(a, rest + list(dims)) if a.ndim else a.reshape(1)
        lead = tuple(a.shape[d] for d in rest)
        flat = moved.reshape(lead + (-1,)) if a.ndim else moved.reshape(1, 1)[0]
        out = np.empty(lead, dtype=object)
        for idx in np.ndindex(*lead):
            out[idx] = f(list(flat[idx]))
        if keepdim:
            out = out.reshape(tuple(1 if d in dims else a.shape[d] for d in range(a.ndim)))
        return out, int(np.prod([a.shape[d] for d in dims])) if dims else 1

    def _sum_list(self, xs):
        acc = R.ZERO
        for x in xs:
            acc = self._add(acc, x)
        return acc

    def op_sum(self, val, x, dim=None, keepdim=False, dtype=None, **kw):
        out, _ = self._reduce(x, dim, keepdim, self._sum_list)
        return self.tt(out, val)

    def op_mean(self, val, x, dim=None, keepdim=False, dtype=None, **kw):
        out, n = self._reduce(x, dim, keepdim, self._sum_list)
        c = Fraction(1, n)
        return self.ew(lambda v: self._mul(v, R.const(c)), val, self.tt(out, val))

    def op_amax(self, val, x, dim=(), keepdim=False, **kw):
        out, _ = self._reduce(x, dim, keepdim, lambda xs: self._max(*xs))
        return self.tt(out, val)

    def op_amin(self, val, x, dim=(), keepdim=False, **kw):
        out, _ = self._reduce(x, dim, keepdim, lambda xs: self._min(*xs))
        return self.tt(out, val)

    def _maxmin_dim(self, kind, val, x, dim=None, keepdim=False, **kw):
        f = (lambda xs: self._max(*xs)) if kind == "max" else (lambda xs: self._min(*xs))
        if dim is None or isinstance(dim, TT):
            if isinstance(dim, TT):  # max(a, b) elementwise
                return self.ew(self._max if kind == "max" else self._min, val, x, dim)
            out, _ = self._reduce(x, None, False, f)
            return self.tt(out, val)
        out, _ = self._reduce(x, dim, keepdim, f)
        return (self.tt(out, val[0] if isinstance(val, (tuple, list)) else None), _NoIndices(self.loc))

    def op_max(self, val, x, dim=None, keepdim=False, **kw):
        return self._maxmin_dim("max", val, x, dim, keepdim)

    def op_min(self, val, x, dim=None, keepdim=False, **kw):
        return self._maxmin_dim("min", val, x, dim, keepdim)

    def op_softmax(self, val, x, dim, half_to_float=False, **kw):
        m, _ = self._reduce(x, dim, True, lambda xs: self._max(*xs))
        e = self.ew(lambda v, mm: self._exp(self._add(v, self._neg(mm))), val, x, self.tt(m))
        s, _ = self._reduce(e, dim, True, self._sum_list)
        return self.ew(lambda v, ss: self._mul(v, self._inv(ss)), val, e, self.tt(s))

    def op_log_softmax(self, val, x, dim, half_to_float=False, **kw):
        m, _ = self._reduce(x, dim, True, lambda xs: self._max(*xs))
        e = self.ew(lambda v, mm: self._exp(self._add(v, self._neg(mm))), val, x, self.tt(m))
        s, _ = self._reduce(e, dim, True, self._sum_list)
        return self.ew(lambda v, mm, ss: self._add(self._add(v, self._neg(mm)),
                                                    self._neg(self.A.scale(self._lg2(ss), LN2_F32))),
                       val, x, self.tt(m), self.tt(s))

    def op_native_layer_norm(self, val, x, normalized_shape, w, b, eps, **kw):
        k = len(normalized_shape)
        dims = list(range(x.a.ndim - k, x.a.ndim))
        mean, n = self._reduce(x, dims, True, self._sum_list)
        inv_n = R.const(Fraction(1, n))
        mean = np.frompyfunc(lambda v: self._mul(v, inv_n), 1, 1)(mean)
        xc = self.ew(lambda v, mm: self._add(v, self._neg(mm)), None, x, self.tt(mean))
        sq = self.ew(lambda v: self._mul(v, v), None, xc)
        var, _ = self._reduce(sq, dims, True, self._sum_list)
        e = self.const(float(eps), x.dtype)
        rstd = np.frompyfunc(lambda v: self._inv(self._sqrt(self._add(self._mul(v, inv_n), e))), 1, 1)(var)
        y = self.ew(self._mul, None, xc, self.tt(rstd))
        if w is not None:
            y = self.ew(self._mul, None, y, w)
        if b is not None:
            y = self.ew(self._add, None, y, b)
        return (y, self.tt(mean), self.tt(rstd))

    # ------------------------------------------------------------------ linear algebra
    def _matmul2(self, a, b):
        M, K = a.shape
        K2, N = b.shape
        out = np.empty((M, N), dtype=object)
        for i in range(M):
            for j in range(N):
                acc = R.ZERO
                for k in range(K):
                    acc = self._add(acc, self._mul(a[i, k], b[k, j]))
                out[i, j] = acc
        return out

    def op_mm(self, val, a, b, **kw):
        return self.tt(self._matmul2(a.a, b.a), val)

    def op_bmm(self, val, a, b, **kw):
        return self.tt(np.stack([self._matmul2(a.a[i], b.a[i]) for i in range(a.a.shape[0])]), val)

    def op_addmm(self, val, c, a, b, beta=1, alpha=1, **kw):
        p = self.tt(self._matmul2(a.a, b.a))
        p = self._alpha(p, alpha, val)
        c = self._alpha(c, beta, val)
        return self.ew(self._add, val, c, p)

    def op_dot(self, val, a, b, **kw):
        return self.tt(self._matmul2(a.a.reshape(1, -1), b.a.reshape(-1, 1)).reshape(()), val)

    def op_mv(self, val, a, b, **kw):
        return self.tt(self._matmul2(a.a, b.a.reshape(-1, 1)).reshape(-1), val)

    def op_matmul(self, val, a, b, **kw):
        if a.a.ndim == 2 and b.a.ndim == 2:
            return self.op_mm(val, a, b)
        raise TorchUnsupported("matmul other than 2-d (traced graphs use mm/bmm)", self.loc)

    # ------------------------------------------------------------------ casts, views
    def op_to_copy(self, val, x, dtype=None, **kw):
        src = x.dtype
        dst = getattr(val, "dtype", dtype)
        fmt = _narrow(src, _dname(dst)) if dst is not None else None
        if dst is not None and not _dname(dst).startswith(("float", "bfloat")):
            raise TorchUnsupported(f"a cast to {dst} (real model)", self.loc)
        if fmt:
            return self.ew(lambda v: self.A.round_to(fmt, v) if isinstance(v, R.Poly) else v, val, x)
        return self.tt(x.a.copy(), val)

    def op_to(self, val, x, *a, **kw):
        return self.op_to_copy(val, x)

    def _shape_of(self, val):
        return tuple(int(s) for s in val.shape)

    def op_view(self, val, x, *a, **kw):
        return self.tt(x.a.reshape(self._shape_of(val)), val)

    op_unsafe_view = op_reshape = op_flatten = op_view

    def op_transpose(self, val, x, d0, d1, **kw):
        return self.tt(np.swapaxes(x.a, d0, d1), val)

    def op_t(self, val, x, **kw):
        return self.tt(x.a.T, val)

    def op_permute(self, val, x, dims, **kw):
        return self.tt(np.transpose(x.a, [d % x.a.ndim for d in dims]), val)

    def op_unsqueeze(self, val, x, d, **kw):
        return self.tt(x.a.reshape(self._shape_of(val)), val)

    def op_squeeze(self, val, x, *a, **kw):
        return self.tt(x.a.reshape(self._shape_of(val)), val)

    def op_expand(self, val, x, size, **kw):
        return self.tt(np.broadcast_to(x.a, self._shape_of(val)), val)

    def op_clone(self, val, x, **kw):
        return self.tt(x.a.copy(), val)

    op_contiguous = op_alias = op_detach = op_lift_fresh_copy = op_clone

    def op_slice(self, val, x, dim=0, start=None, end=None, step=1, **kw):
        idx = [slice(None)] * x.a.ndim
        idx[dim] = slice(start, end, step)
        return self.tt(x.a[tuple(idx)], val)

    def op_select(self, val, x, dim, index, **kw):
        return self.tt(np.take(x.a, index, axis=dim), val)

    def op_cat(self, val, xs, dim=0, **kw):
        return self.tt(np.concatenate([t.a for t in xs if t.a.size or t.a.ndim > 1], axis=dim), val)

    def op_stack(self, val, xs, dim=0, **kw):
        return self.tt(np.stack([t.a for t in xs], axis=dim), val)

    # ------------------------------------------------------------------ constants, masks
    def _full(self, val, v):
        a = np.empty(self._shape_of(val), dtype=object)
        c = self.const(v, val.dtype) if not isinstance(v, bool) else v
        if _dname(val.dtype) == "bool":
            c = bool(v)
        a.fill(c)
        return self.tt(a, val)

    def op_zeros(self, val, *a, **kw):
        return self._full(val, 0)

    def op_ones(self, val, *a, **kw):
        return self._full(val, 1)

    def op_full(self, val, size, v, **kw):
        return self._full(val, v)

    def op_zeros_like(self, val, *a, **kw):
        return self._full(val, 0)

    def op_ones_like(self, val, *a, **kw):
        return self._full(val, 1)

    def op_full_like(self, val, x, v, **kw):
        return self._full(val, v)

    def op_scalar_tensor(self, val, v, **kw):
        return self._full(val, v)

    def op_arange(self, val, *a, **kw):
        nums = [x for x in a if isinstance(x, (int, float))]
        r = np.arange(*nums)
        out = np.empty(r.shape, dtype=object)
        for i, v in enumerate(r.tolist()):
            out[i] = self.const(v, val.dtype)
        return self.tt(out, val)

    def _tri(self, val, x, diagonal, lower):
        a = x.a.copy()
        n, m = a.shape[-2], a.shape[-1]
        for i in range(n):
            for j in range(m):
                if (j - i > diagonal) if lower else (j - i < diagonal):
                    a[..., i, j] = False if _dname(x.dtype) == "bool" else R.ZERO
        return self.tt(a, val)

    def op_tril(self, val, x, diagonal=0, **kw):
        return self._tri(val, x, diagonal, True)

    def op_triu(self, val, x, diagonal=0, **kw):
        return self._tri(val, x, diagonal, False)

    def _cmp(self, op):
        def f(val, a, b, **kw):
            def c(x, y):
                kx, ky = self._key(x), self._key(y)
                return op(kx, ky)
            out = self.ew(c, val, a, b)
            return out
        return f

    def _key(self, x):
        if isinstance(x, bool):
            return int(x)
        if isinstance(x, R.Inf):
            return float(x.sign) * float("inf")
        if isinstance(x, R.Poly) and x.is_const():
            return x.const()
        raise TorchUnsupported("a comparison that depends on input data (no path splitting in the real model)",
                               self.loc)

    def op_lt(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x < y)(val, a, b)

    def op_le(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x <= y)(val, a, b)

    def op_gt(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x > y)(val, a, b)

    def op_ge(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x >= y)(val, a, b)

    def op_eq(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x == y)(val, a, b)

    def op_ne(self, val, a, b, **kw):
        return self._cmp(lambda x, y: x != y)(val, a, b)

    def op_logical_not(self, val, a, **kw):
        return self.ew(lambda x: not self._key(x), val, a)

    op_bitwise_not = op_logical_not

    def _truth(self, c):
        if isinstance(c, (bool, np.bool_)):
            return bool(c)
        return bool(self._key(c))

    def op_where(self, val, c, a, b, **kw):
        return self.ew(lambda cc, x, y: x if self._truth(cc) else y, val, c, a, b)

    def op_masked_fill(self, val, x, mask, v, **kw):
        fill = v.a.reshape(-1)[0] if isinstance(v, TT) else self.const(v, val.dtype)  # a 0-d tensor or a number
        return self.ew(lambda xx, m: fill if self._truth(m) else xx, val, x, mask)


class _NoIndices:
    """The indices half of ``max(dim)``: using it is unsupported."""

    def __init__(self, loc):
        self.loc = loc


def _op_name(target):
    s = str(target)  # aten.add.Tensor
    parts = s.split(".")
    if len(parts) >= 2 and parts[0] == "aten":
        return parts[1]
    return getattr(target, "__name__", s)


# --------------------------------------------------------------------------- entry point


def torch_reference(ref, cand, bind=None) -> TorchReference:
    """``ref`` (``torch:MODULE:FN`` or a callable) bound to the candidate side ``cand``."""
    if callable(ref):
        _need_torch("reference=")
        return TorchReference(ref, cand, bind)
    return TorchReference(load_function(ref), cand, bind, text=ref)


TORCH_ASSUMPTION = ("torch reference: the traced ATen graph on these shapes (Python control flow is "
                    "specialized to them); operators on f16/bf16 tensors read as exact real operations like the "
                    "kernels' add.f16, only explicit casts are rounding atoms; exp is ex2(x*log2 e)")


def fix_counterexample(res, tref):
    """A torch reference has no launch: its replay is the candidate's (the ``.npz`` carries the
    torch outputs as ``expected__<buffer>``) plus the function on the same inputs. The
    assumptions name the candidate alone (the reference is not a kernel)."""
    res.assumptions = [a.replace("both kernels are free of data races", "the candidate is free of data races")
                       for a in res.assumptions]
    if res.model == "real":
        res.assumptions.append(TORCH_ASSUMPTION)
    cex = res.counterexample
    if not cex:
        return res
    launch = cex.get("launch", {})
    rl = launch.pop("reference", None)
    if rl and os.path.exists(rl):
        try:
            os.remove(rl)
        except OSError:
            pass
    bind = ",".join(f"{k}={v}" for k, v in tref.bind.items())
    cex["replay_reference"] = (f"python -m kverify.verifier.equivalence.torchref {tref.text} {tref.cand_path} "
                               f"--launch {launch.get('candidate')} --inputs {cex['inputs_file']['reference']}"
                               f" --at {cex['buffer']}:{cex['index']}" + (f" --bind {bind}" if bind else ""))
    return res


def main(argv=None) -> int:
    """``python -m kverify.verifier.equivalence.torchref torch:MODULE:FN KERNEL --launch L --inputs X.npz``:
    the function on the inputs of a counterexample; prints each output next to the ``expected__``
    arrays when the file has them (the candidate's replay prints its own)."""
    import argparse

    from kverify.semantics.ir import load_module
    from kverify.launch import LaunchSpec, load as load_launch

    from .engine import Side

    p = argparse.ArgumentParser(prog="python -m kverify.verifier.equivalence.torchref")
    p.add_argument("ref")
    p.add_argument("kernel")
    p.add_argument("--launch", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--bind")
    p.add_argument("--at", help="BUFFER:FLAT_INDEX: print that element")
    a = p.parse_args(argv)
    m = load_module(a.kernel)
    src = load_launch(a.launch, a.kernel, None)
    k = m.kernel(src.data.get("kernel")) if src.data.get("kernel") else m.kernels[0]
    side = Side(a.kernel, m, k, LaunchSpec.from_dict(src.data, src.path), src.path)
    tref = torch_reference(a.ref, side, a.bind)
    with np.load(a.inputs) as z:
        arrays = {n: z[n] for n in z.files}
    r = tref.run_reference({n: v for n, v in arrays.items() if not n.startswith("expected__")})
    print(f"{tref.text}: {r.status}")
    if a.at:
        buf, _, idx = a.at.rpartition(":")
        print(f"  {buf}[{idx}] = {np.asarray(r.outputs[buf]).reshape(-1)[int(idx)].item()!r}")
    for key in tref.outputs:
        out = r.outputs[key]
        print(f"  {key}: {np.array2string(np.asarray(out).reshape(-1)[:8], precision=6)}"
              f"{' ...' if np.asarray(out).size > 8 else ''}")
    return 0 if r.status == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())

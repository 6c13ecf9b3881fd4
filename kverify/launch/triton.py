"""A Triton call site as a launch: ``jit_fn[grid](*args, **kw)`` compiled for sm_90a without a
GPU and bound to the PTX kernel's parameters.

What Triton's JIT and launcher do, done here the same way (triton 3.6):

  * specialization and signature: the JIT's own binder (``create_function_from_signature``
    with the CUDA backend for ``GPUTarget("cuda", 90, 32)``): tensors become ``*fp32`` etc.,
    integers ``i32``/``i64`` (1 becomes a constexpr, multiples of 16 get ``tt.divisibility``),
    ``TensorDescriptor`` ``tensordesc<fp16[128, 64]>``; then ``triton.compile(ASTSource(...))``;
  * parameters: constexprs vanish; a tensor is one pointer parameter; a ``TensorDescriptor`` of
    rank r becomes a 128-byte ``CUtensorMap`` (box and swizzle from the compiled kernel's
    ``tensordesc_meta``, as the launcher's ``make_tensordesc_arg`` encodes it), r ``i32`` shapes
    and r ``i64`` strides; two trailing pointers (global and profile scratch) are null when the
    kernel needs no scratch, else buffers of ``size x programs`` bytes;
  * dynamic shared memory is ``metadata.shared``; the block is ``num_warps x 32`` threads.

The kernel's parameters are renamed to the Python names (``x_ptr``; ``a_desc``,
``a_desc.shape[0]``, ``a_desc.strides[1]``; ``global_scratch``); a descriptor's backing tensor is
the buffer ``a_desc.base``. PTX ``.loc`` lines point into the Python file.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kverify.semantics.ir import KernelError

ARCH = 90
SWIZZLE = {0: "none", 1: "32B", 2: "64B", 3: "128B"}
COMPILE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_pdl",
                   "launch_cooperative_grid", "debug", "ptx_version", "default_dot_input_precision")


@dataclass
class TritonCall:
    """A compiled call site: the PTX, its metadata, the launch dict (keyed by Python names) and
    the buffer contents taken from the arguments."""

    name: str
    ptx: str
    metadata: dict
    signature: dict
    constexprs: dict
    launch: dict
    inputs: dict = field(default_factory=dict)
    names: list = field(default_factory=list)  # the PTX parameters' Python names, in order
    source: str | None = None  # the Python file of the kernel


def _where(fn) -> tuple[str, int]:
    import inspect

    try:
        return inspect.getsourcefile(fn.fn) or "<triton>", fn.starting_line_number if hasattr(
            fn, "starting_line_number") else inspect.getsourcelines(fn.fn)[1]
    except (OSError, TypeError):
        return "<triton>", 1


def _placeholders(args, kwargs):
    """Replace ``kverify.Tensor`` placeholders by empty torch tensors (what the JIT needs to
    specialize); returns the new args/kwargs and the set of ids that had no contents."""
    from .args import Tensor

    empty = set()

    def conv(v):
        if isinstance(v, Tensor):
            import torch

            from kverify.launch import dtypes

            t = torch.empty(v.shape, dtype=getattr(torch, dtypes.dtype(v.dtype, "<args>").name))
            empty.add(id(t))
            return t
        if type(v).__name__ == "TensorDescriptor" and isinstance(v.base, Tensor):
            return replace(v, base=conv(v.base))
        return v

    return [conv(a) for a in args], {k: conv(v) for k, v in kwargs.items()}, empty


def compile_call(jit_fn, grid, args, kwargs) -> TritonCall:
    """Compile ``jit_fn`` as ``jit_fn[grid](*args, **kwargs)`` would, and bind the launch."""
    try:
        import triton
        from triton import knobs
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource, compile as tcompile, make_backend
        from triton.runtime.jit import JITFunction, create_function_from_signature
    except ImportError as e:
        raise KernelError(f"kverify.triton needs triton (pip install 'kverify[triton]'): {e}", "<triton>", 1, 1) \
            from None
    if not isinstance(jit_fn, JITFunction):
        raise KernelError(f"kverify.triton.check takes a @triton.jit function, got {type(jit_fn).__name__} "
                          f"(for an autotuned kernel pass its .fn with one configuration's meta-parameters)",
                          "<triton>", 1, 1)
    src_file, src_line = _where(jit_fn)
    args, kwargs, empty = _placeholders(list(args), dict(kwargs))
    kwargs["debug"] = kwargs.get("debug", jit_fn.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    target = GPUTarget("cuda", ARCH, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    try:
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound, specialization, options)
    except (TypeError, KeyError, AssertionError) as e:
        raise KernelError(f"{jit_fn.fn.__name__}: {e}", src_file, src_line, 1) from None
    if options.num_ctas != 1:
        raise KernelError(f"{jit_fn.fn.__name__}: num_ctas={options.num_ctas} (clusters) is not supported by "
                          f"kverify.triton", src_file, src_line, 1)
    try:
        compiled = tcompile(ASTSource(jit_fn, signature, constexprs, attrs), target=target, options=options.__dict__)
    except Exception as e:  # a compile error in user code: say where, no traceback
        msg = str(e).strip().splitlines()
        raise KernelError(f"triton could not compile {jit_fn.fn.__name__}: {' '.join(msg[-3:])[:800]}", src_file,
                          src_line, 1) from None
    md = compiled.metadata._asdict() if hasattr(compiled.metadata, "_asdict") else dict(vars(compiled.metadata))
    grid_t = grid(bound) if callable(grid) else grid
    if isinstance(grid_t, int):
        grid_t = (grid_t,)
    grid_t = [int(g) for g in grid_t] + [1] * (3 - len(grid_t))
    if len(grid_t) != 3 or min(grid_t) < 1:
        raise KernelError(f"grid must be 1 to 3 positive integers, got {grid_t}", src_file, src_line, 1)
    launch, inputs, names = _bind(jit_fn, bound, signature, md, grid_t, empty, src_file, src_line)
    launch.update({"kernel": md["name"], "grid": grid_t, "block": [int(md["num_warps"]) * 32, 1, 1],
                   "cluster": [1, 1, 1], "dynamic_smem": int(md.get("shared") or 0)})
    return TritonCall(md["name"], compiled.asm["ptx"], md, dict(signature),
                      {jit_fn.arg_names[p[0]]: v for p, v in constexprs.items() if len(p) == 1}, launch, inputs, names,
                      src_file)


def _bind(jit_fn, bound, signature, md, grid, empty, src_file, src_line):
    """The launch dict (args, buffers, tensormaps keyed by Python names), the buffer contents
    and the Python name of every PTX parameter in order."""
    from .args import buffer_of

    args, buffers, tensormaps, inputs, names = {}, {}, {}, {}, []
    descs = iter(md.get("tensordesc_meta") or [])
    for name, value in bound.items():
        sig = signature[name]
        if sig == "constexpr":
            continue
        if not isinstance(sig, str):
            raise KernelError(f"{jit_fn.fn.__name__}: parameter {name} is a tuple ({sig}); tuple arguments are not "
                              f"supported by kverify.triton", src_file, src_line, 1)
        if sig.startswith("tensordesc"):
            meta = next(descs, None)
            if meta is None:
                raise KernelError(f"{name}: the compiled kernel has no tensor-map metadata for this descriptor "
                                  f"(device-side descriptors are not supported)", src_file, src_line, 1)
            if meta.get("fp4_padded"):
                raise KernelError(f"{name}: fp4-padded tensor descriptors are not supported", src_file, src_line, 1)
            base = f"{name}.base"
            buffers[base], arr = buffer_of(value.base, f"argument {name}.base")
            if arr is not None and id(value.base) not in empty:
                inputs[base] = arr
            shape, strides = [int(s) for s in value.shape], [int(s) for s in value.strides]
            tensormaps[name] = {"dtype": buffers[base]["dtype"], "shape": shape, "strides": strides,
                                "box": [int(b) for b in meta["block_size"]], "swizzle": SWIZZLE[int(meta["swizzle"])],
                                "buffer": base, **({"oob_fill": "nan"} if value.padding == "nan" else {})}
            names.append(name)
            for i, s in enumerate(shape):
                names.append(f"{name}.shape[{i}]")
                args[names[-1]] = s
            for i, s in enumerate(strides):
                names.append(f"{name}.strides[{i}]")
                args[names[-1]] = s
        elif sig.startswith("*"):
            names.append(name)
            if value is None:
                args[name] = 0
                continue
            buffers[name], arr = buffer_of(value, f"argument {name}")
            if arr is not None and id(value) not in empty:
                inputs[name] = arr
        else:
            names.append(name)
            args[name] = value.item() if hasattr(value, "item") else value
    _no_aliasing(jit_fn, bound, signature, src_file, src_line)
    programs = grid[0] * grid[1] * grid[2]
    for scratch in ("global_scratch", "profile_scratch"):
        names.append(scratch)
        size = int(md.get(f"{scratch}_size") or 0)
        if size:
            buffers[scratch] = {"dtype": "uint8", "shape": [size * programs]}
        else:
            args[scratch] = 0
    return {"args": args, "buffers": buffers, "tensormaps": tensormaps}, inputs, names


def _no_aliasing(jit_fn, bound, signature, src_file, src_line):
    """Refuse tensor arguments whose memory overlaps (an in-place call ``k(x, x)``, overlapping
    views of one storage): each becomes a buffer of its own here, and the proofs assume distinct
    pointer parameters do not alias -- an in-place race between programs was proved absent."""
    spans = []
    for name, value in bound.items():
        sig = signature[name]
        t = value.base if isinstance(sig, str) and sig.startswith("tensordesc") else value
        if not isinstance(sig, str) or not sig.startswith(("*", "tensordesc")) or not hasattr(t, "data_ptr"):
            continue
        size = t.numel() * t.element_size()
        if size:
            spans.append((t.data_ptr(), t.data_ptr() + size, name))
    spans.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            raise KernelError(f"{jit_fn.fn.__name__}: arguments {an} and {bn} share memory (an in-place call or "
                              f"overlapping views): aliasing pointer arguments are not modelled by kverify.triton; "
                              f"pass tensors that do not overlap", src_file, src_line, 1)


def name_params(module, kernel_name: str, names: list):
    """``module`` with the parameters of ``kernel_name`` given the Python names ``names``."""
    k = module.kernel(kernel_name)
    if len(names) != len(k.params):
        raise KernelError(f"{kernel_name}: the PTX has {len(k.params)} parameters, the Python call binds "
                          f"{len(names)} ({', '.join(names)}): an unexpected Triton parameter layout",
                          module.path, 0, 0)
    k2 = replace(k, params=tuple(replace(p, source_name=n) for p, n in zip(k.params, names)))
    return replace(module, kernels=tuple(k2 if x is k else x for x in module.kernels)), k2

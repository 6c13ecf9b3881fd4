"""Verify a Triton kernel from its call site: ``kverify.triton.check(kernel, grid, *args, **kw)``
checks what ``kernel[grid](*args, **kw)`` would launch.

    rep = kverify.triton.check(softmax_kernel, (n_rows,), out, x, x.stride(0), out.stride(0), n_cols,
                               BLOCK=128, num_warps=4)
    print(rep)            # the text of kverify check; findings name lines of the Python file

The kernel is compiled by Triton for sm_90a (``GPUTarget("cuda", 90, 32)``), no GPU needed, with
the JIT's own specialization of the arguments; ``kverify.launch.triton`` binds the Python
arguments to the PTX parameters (constexprs vanish, tensor descriptors become tensor maps,
scratch pointers are supplied, dynamic shared memory comes from the compiled metadata). Tensor
contents are the interpreter's inputs; ``kverify.Tensor(shape, dtype)`` stands for a tensor with
random contents. Needs ``pip install 'kverify[triton]'`` (triton 3.6.0) and torch.
"""
from __future__ import annotations


def compile(kernel, grid, *args, **kwargs):  # noqa: A001 - mirrors triton.compile's role
    """The compiled call (``kverify.launch.triton.TritonCall``): PTX, metadata, the launch dict
    keyed by Python names, and the buffer contents taken from the arguments."""
    from kverify.launch.triton import compile_call

    return compile_call(kernel, grid, args, kwargs)


def _prepare(call):
    from kverify.api import kernel_file
    from kverify.launch import LaunchSpec
    from kverify.launch.triton import name_params
    from kverify.semantics.ir import load_module

    path = kernel_file(_relative_files(call.ptx), call.name)
    module, k = name_params(load_module(path), call.name, call.names)
    # the launch is keyed by PTX parameter names, so that a replay command on the PTX file (which
    # knows no Python names) binds the same way; findings still print the Python names
    ptx = {n: p.name for n, p in zip(call.names, k.params)}
    launch = dict(call.launch)
    for sect in ("args", "buffers", "tensormaps"):
        launch[sect] = {ptx.get(key, key): v for key, v in (launch.get(sect) or {}).items()}
    return module, k, path, LaunchSpec.from_dict(launch, "<triton>"), ptx


def _relative_files(ptx: str) -> str:
    """``ptx`` with ``.file`` paths under the working directory made relative to it (what
    findings then print)."""
    import os
    import re

    cwd = os.getcwd() + os.sep

    def rel(m):
        path = m.group(2)
        return f'{m.group(1)}"{os.path.relpath(path)}"' if path.startswith(cwd) else m.group(0)

    return re.sub(r'^(\s*\.file\s+\d+\s+)"([^"]*)"', rel, ptx, flags=re.M)


def check(kernel, grid, *args, budget: int | None = None, timeout: float = 10.0, smt: bool = True, **kwargs):
    """``kverify.check`` of ``kernel[grid](*args, **kwargs)``: a ``kverify.Report``. ``kwargs``
    are the call's constexprs and compile options (``num_warps``, ``num_stages``, ...);
    ``budget``/``timeout``/``smt`` are ``kverify check``'s ``--budget``/``--timeout``/``--no-smt``."""
    from kverify.api import Report, replay_with_inputs
    from kverify.verifier.check import check_kernel

    call = compile(kernel, grid, *args, **kwargs)
    module, k, path, spec, ptx = _prepare(call)
    rep = check_kernel(module, k, spec, budget=budget, timeout_s=timeout, smt=smt, path=path,
                       inputs=call.inputs or None)
    rep = replay_with_inputs(rep, {ptx.get(n, n): v for n, v in call.inputs.items()})
    return Report([rep], "check", call.inputs)


def run(kernel, grid, *args, schedule: str = "deterministic", seed: int = 0, budget: int | None = None, **kwargs):
    """Run ``kernel[grid](*args, **kwargs)`` on the interpreter: a ``RunResult`` whose ``outputs``
    are keyed by the Python names (``out_ptr``; ``c_desc.base`` for a descriptor's tensor)."""
    from kverify.semantics.interpreter import run_kernel

    call = compile(kernel, grid, *args, **kwargs)
    module, k, _, spec, _ = _prepare(call)
    return run_kernel(module, k, spec, inputs=call.inputs or None, schedule=schedule, seed=seed, budget=budget)

"""Input generation: the initial contents of a launch's buffers, from the arrays a caller
gives (numpy arrays or CPU torch tensors, keyed by buffer name, PTX name or position) or
seeded random values (floats uniform in [-1, 1), integers and fp8 bytes in [0, 100), bools
0/1)."""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir import KernelError

from .dtypes import dtype as _dtype
from .spec import LaunchSpec, lookup, param_key


def spec_seed(spec: LaunchSpec) -> int:
    """Seed of the random inputs of ``spec`` when the caller gives none."""
    return 0


def random_array(rng: np.random.Generator, dtype: str, shape) -> np.ndarray:
    """Random contents of a buffer (bfloat16 as its bit patterns)."""
    r = _dtype(dtype)
    if r.name == "bfloat16":
        f = rng.uniform(-1, 1, shape).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16)
    if np.dtype(r.np).kind == "f":
        return rng.uniform(-1, 1, shape).astype(r.np)
    if r.kind == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(0, 100, shape).astype(r.np)


def given_key(inputs, name, p, i):
    """The key of ``inputs`` that gives buffer ``name`` (parameter ``p`` at position ``i``, or
    ``None``): its buffer name, PTX or source name, or position; ``None`` when none does."""
    if inputs is None:
        return None
    for key in (name, p.name, p.source_name, str(i), i) if p is not None else (name,):
        if key is not None and key in inputs:
            return key
    return None


def drawn_buffers(kernel, spec: LaunchSpec, inputs: dict | None) -> list:
    """The buffers ``initial_inputs`` fills with seeded random contents (``inputs`` gives no array)."""
    out = []
    for i, p in enumerate(kernel.params):
        if lookup(spec.buffers, kernel, i) is not None and given_key(inputs, param_key(kernel, i), p, i) is None:
            out.append(param_key(kernel, i))
    names = {param_key(kernel, i) for i in range(len(kernel.params)) if lookup(spec.buffers, kernel, i) is not None}
    out += [n for n in spec.buffers if n not in names and not str(n).isdigit() and not (inputs and n in inputs)]
    return out


def input_array(inputs, name, p, i, b, rng, kernel) -> np.ndarray:
    """The initial contents of buffer ``b`` (parameter ``p`` at position ``i``, or ``None``
    for a buffer named only by tensor maps): the caller's array converted to the buffer's
    dtype and shape, else random."""
    dtype = b["dtype"]
    shape = tuple(int(s) for s in b["shape"])
    key = given_key(inputs, name, p, i)
    arr = None if key is None else inputs[key]
    if arr is not None:
        if hasattr(arr, "detach"):  # torch tensor on the CPU
            t = arr.detach().cpu().contiguous()
            if str(t.dtype) == "torch.bfloat16":
                import torch

                t = t.view(torch.int16)
            arr = t.numpy()
        arr = np.array(arr, copy=True)
        r = _dtype(dtype)
        if arr.dtype != r.np and not (r.name == "bfloat16" and arr.dtype.itemsize == 2):
            arr = arr.astype(r.np)
        if arr.size != int(np.prod(shape)):
            raise KernelError(f"input {name!r} has {arr.size} elements, the launch spec says shape {list(shape)}",
                              "<inputs>", 1, 1)
        return np.ascontiguousarray(arr).reshape(shape)
    return random_array(rng, dtype, shape)


def initial_inputs(kernel, spec: LaunchSpec, inputs: dict | None, seed: int) -> dict:
    """Every buffer's initial contents, fixed once (so every schedule and the reference see
    the same inputs): by parameter, then buffers named only by tensor maps."""
    rng = np.random.default_rng(seed)
    out = {}
    for i, p in enumerate(kernel.params):
        b = lookup(spec.buffers, kernel, i)
        if b is None:
            continue
        name = param_key(kernel, i)
        out[name] = input_array(inputs, name, p, i, b, rng, kernel)
    names = set(out)
    for name, b in spec.buffers.items():
        if name not in names and not str(name).isdigit():
            out[name] = input_array(inputs, name, None, -1, b, rng, kernel) if inputs and name in inputs \
                else random_array(rng, b["dtype"], tuple(b["shape"]))
    # module variables' contents (``var:NAME``: what the host wrote, recorded by a capture)
    out.update({k: np.asarray(v) for k, v in (inputs or {}).items() if isinstance(k, str) and k.startswith("var:")})
    return out

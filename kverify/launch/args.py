"""Launch arguments given as Python values: one per kernel parameter (or by name), each a CPU
torch tensor or numpy array (a buffer of its dtype and shape, with its contents), a ``Tensor``
placeholder (a buffer of a shape and dtype, seeded random contents), a scalar, or ``None`` (a
null pointer). ``bind`` turns them into the ``args``/``buffers`` of a launch dict and the
buffers' initial contents. torch is never imported here: tensors are recognised by duck typing.
"""
from __future__ import annotations

from dataclasses import dataclass

from kverify.semantics.ir import KernelError


@dataclass(frozen=True)
class Tensor:
    """A buffer given by shape and dtype only (random contents): ``kverify.Tensor((64, 64), "fp16")``.
    ``dtype`` is any spelling of ``kverify.launch.dtypes`` (numpy, torch, PTX, short)."""

    shape: tuple
    dtype: object = "float32"

    def __post_init__(self):
        shape = (self.shape,) if isinstance(self.shape, int) else tuple(int(s) for s in self.shape)
        object.__setattr__(self, "shape", shape)


def _is_array(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and not _is_scalar(v)


def _is_scalar(v) -> bool:
    import numpy as np

    return isinstance(v, (bool, int, float, np.generic)) or (hasattr(v, "shape") and tuple(v.shape) == ()
                                                             and not hasattr(v, "detach"))


def buffer_of(value, what: str):
    """``({"dtype", "shape"}, contents or None)`` for a tensor, array or ``Tensor``."""
    from kverify.launch import dtypes

    if isinstance(value, Tensor):
        return {"dtype": dtypes.dtype(value.dtype, "<args>").name, "shape": list(value.shape) or [1]}, None
    if hasattr(value, "detach"):  # torch
        if not value.is_contiguous():
            raise KernelError(f"{what}: a non-contiguous tensor (strides {tuple(value.stride())}); pass "
                              f".contiguous() or give the strides as arguments over a contiguous buffer",
                              "<args>", 1, 1)
        d = dtypes.dtype(str(value.dtype), "<args>")
    else:
        import numpy as np

        value = np.asarray(value)
        d = dtypes.dtype(value.dtype, "<args>")
    return {"dtype": d.name, "shape": list(value.shape) or [1]}, value


def bind(kernel, args, path: str = "<args>"):
    """``(args, buffers, inputs)`` of a launch dict from ``args`` (a sequence per parameter or a
    dict by name or position) for ``kernel``'s parameters; keys are ``param_key`` names."""
    from kverify.launch import param_key

    params = kernel.params
    names = [param_key(kernel, i) for i in range(len(params))]
    listing = ", ".join(names) or "none"
    if isinstance(args, dict):
        pairs = []
        for key, v in args.items():
            if isinstance(key, int) and 0 <= key < len(params):
                i = key
            else:
                i = next((j for j, p in enumerate(params) if key in (p.name, p.source_name)), None)
            if i is None:
                raise KernelError(f"kernel {kernel.name} has no parameter {key!r} (parameters: {listing})", path, 1, 1)
            pairs.append((i, v))
    else:
        args = tuple(args or ())
        if len(args) != len(params):
            raise KernelError(f"kernel {kernel.name} takes {len(params)} argument(s) ({listing}), got {len(args)}",
                              path, 1, 1)
        pairs = list(enumerate(args))
    scalars, buffers, inputs = {}, {}, {}
    for i, v in pairs:
        name = names[i]
        if v is None:
            scalars[name] = 0
        elif _is_scalar(v):
            scalars[name] = v.item() if hasattr(v, "item") else v
        elif isinstance(v, Tensor) or _is_array(v):
            if params[i].array:
                raise KernelError(f"parameter {name} is a {params[i].size}-byte by-value parameter (a tensor map?), "
                                  f"not a pointer: a tensor cannot be passed for it", path, 1, 1)
            buffers[name], arr = buffer_of(v, f"argument {name}")
            if arr is not None:
                inputs[name] = arr
        else:
            raise KernelError(f"argument {name}: cannot pass a {type(v).__name__} (tensors, numpy arrays, "
                              f"kverify.Tensor, scalars and None are accepted)", path, 1, 1)
    return scalars, buffers, inputs


def to_numpy(value):
    """A numpy array with the contents of a CPU torch tensor (bfloat16 as its bit patterns) or
    an array-like."""
    import numpy as np

    if hasattr(value, "detach"):
        t = value.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch

            t = t.view(torch.int16)
        return t.numpy()
    return np.asarray(value)

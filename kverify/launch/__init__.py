"""The launch binding every command and checker uses: the launch spec (``spec``), the one
resolver from what a user passes (``resolve``), the dtype table (``dtypes``), memory
windows and parameter layout (``layout``), the kernel parameter bytes with by-value structs
(``params``), the launch-spec schema (``schema``) and input generation (``inputs``).

Sits beside ``kverify.semantics.ir`` and imports nothing above it.
"""
from __future__ import annotations

from .dtypes import DTYPES, Dtype, dtype
from .inputs import initial_inputs, input_array, random_array, spec_seed
from .layout import arg_bits, param_offsets
from .params import ParamImage, param_bytes
from .resolve import Resolved, Source, from_flags, instantiate, load, resolve
from .spec import LaunchSpec, lookup, param_key

__all__ = ["DTYPES", "Dtype", "dtype", "LaunchSpec", "lookup", "param_key", "arg_bits", "param_offsets",
           "ParamImage", "param_bytes",
           "initial_inputs", "input_array", "random_array", "spec_seed", "Resolved", "Source", "from_flags",
           "instantiate", "load", "resolve"]

"""Lowering of the core IR back to CUDA C++ (inline PTX per instruction), the TVM-FFI host
wrapper, and the nvcc/ptxas build used to check that lowered kernels compile."""
from .ctype import LoweringError
from .cuda import lower_kernel, lower_module

__all__ = ["LoweringError", "lower_kernel", "lower_module"]

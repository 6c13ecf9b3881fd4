"""Core IR of kverify: nodes, types, symbolic integers, the op table, the PTX / CUDA / IR
text front ends, structuring, and the printer."""
from .errors import KernelError
from .load import load_module, source_lines
from .nodes import *  # noqa: F401,F403
from .optable import OPS, split_opcode
from .printer import print_kernel, print_module
from .ptx import load_ptx, parse_ir, parse_ptx
from .symint import SymInt
from .visit import instructions, map_instrs, substitute_params, walk

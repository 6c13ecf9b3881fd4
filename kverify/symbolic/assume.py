"""Preconditions over a kernel's scalar parameters (``kverify check --assume 'n > 0'``,
``kverify.check(..., assume=...)``): a small expression language in Python syntax, parsed with
``ast`` into z3 over the parameters' symbolic values.

Grammar: integer literals, parameter names (CUDA or PTX), ``+ - *``, ``//`` and ``%`` by a
positive integer literal (so the meaning is Python's), unary ``-``, comparisons (chained as
in Python), ``and`` / ``or`` / ``not``. A parameter's value is its signed (``.s*`` types) or
unsigned (other types) reading; arithmetic is on ``WIDTH``-bit signed bit-vectors (exact for
every value within +-2^127, which parameters of at most 64 bits and one product stay in; bit-vectors
rather than z3 integers keep the race queries decidable by bit-blasting). Anything else is a
``KernelError`` at ``<command line>:1:COL``.
"""
from __future__ import annotations

import ast

import z3

from kverify.semantics.ir import KernelError

from .budget import SolverBudget

ORIGIN = "<command line>"
WIDTH = 128

_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        # floor division and remainder by a positive divisor, as in Python (z3's ``%`` on
        # bit-vectors is SMod, with the divisor's sign; a - a % b is then a multiple of b, which
        # signed ``/`` divides exactly)
        ast.FloorDiv: lambda a, b: (a - a % b) / b,
        ast.Mod: lambda a, b: a % b}
_CMP = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
        ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


def _err(expr, msg, col=1):
    return KernelError(f"--assume {expr!r}: {msg}", ORIGIN, 1, col)


def scalar_terms(kernel, params: dict) -> dict:
    """Name (CUDA and PTX) -> ``WIDTH``-bit term of each parameter's value, from ``params``
    (PTX name -> ``(bit-vector term, Param)``, as ``Env.params``)."""
    out = {}
    for term, p in params.values():
        if p.array:
            continue
        signed = p.type.name.startswith("s")
        ext = WIDTH - term.size()
        v = z3.SignExt(ext, term) if signed else z3.ZeroExt(ext, term)
        out[p.name] = v
        if p.source_name:
            out[p.source_name] = v
    return out


def to_z3(expr: str, names: dict, kernel=None, used: set | None = None):
    """The z3 condition of ``expr`` over ``names`` (name -> ``WIDTH``-bit term); the names it
    reads are added to ``used``."""
    used = set() if used is None else used
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise _err(expr, e.msg, e.offset or 1) from None

    def col(n):
        return getattr(n, "col_offset", 0) + 1

    def num(n):
        v = ev(n)
        if z3.is_bool(v):
            raise _err(expr, "a condition where a number is expected", col(n))
        return v

    def cond(n):
        v = ev(n)
        if not z3.is_bool(v):
            raise _err(expr, "a number where a condition is expected", col(n))
        return v

    def ev(n):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            if abs(n.value) >= 1 << (WIDTH - 2):
                raise _err(expr, f"integer {n.value} out of range", col(n))
            return z3.BitVecVal(n.value, WIDTH)
        if isinstance(n, ast.Name):
            if n.id not in names:
                shown = [p.source_name or p.name for p in kernel.params if not p.array] if kernel is not None \
                    else sorted(names)
                raise _err(expr, f"no parameter {n.id!r} (the kernel's: {', '.join(shown) or 'none'})", col(n))
            used.add(n.id)
            return names[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -num(n.operand)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return z3.Not(cond(n.operand))
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and not (
                    isinstance(n.right, ast.Constant) and type(n.right.value) is int and n.right.value > 0):
                raise _err(expr, "// and % take a positive integer literal on the right", col(n.right))
            return _BIN[type(n.op)](num(n.left), num(n.right))
        if isinstance(n, ast.BoolOp):
            vals = [cond(v) for v in n.values]
            return z3.And(*vals) if isinstance(n.op, ast.And) else z3.Or(*vals)
        if isinstance(n, ast.Compare):
            out, left = [], num(n.left)
            for o, c in zip(n.ops, n.comparators):
                if type(o) not in _CMP:
                    raise _err(expr, f"unsupported comparison {type(o).__name__}", col(c))
                right = num(c)
                out.append(_CMP[type(o)](left, right))
                left = right
            return z3.And(*out) if len(out) > 1 else out[0]
        raise _err(expr, f"unsupported expression ({type(n).__name__}; allowed: integers, parameter names, "
                   "+ - * // %, comparisons, and/or/not)", col(n))

    return cond(tree.body)


def preconditions(kernel, params: dict, exprs) -> list:
    """``[(expr, z3 condition)]`` for ``exprs``; a bad expression is a ``KernelError``, and so
    is one the launch's concrete arguments (constants in ``params``) break, or a set that no
    parameter values satisfy: nothing may be proved under a false assumption."""
    names = scalar_terms(kernel, params)
    values = {}
    for term, p in params.values():
        if not p.array and z3.is_bv_value(term):
            v = term.as_signed_long() if p.type.name.startswith("s") else term.as_long()
            values[p.name] = v
            if p.source_name:
                values[p.source_name] = v
    out = []
    for e in exprs:
        used: set = set()
        c = to_z3(e, names, kernel, used)
        if used <= set(values) and _sat([c]) == z3.unsat:
            given = ", ".join(f"{n}={values[n]}" for n in sorted(used))
            raise KernelError(f"the launch's arguments break the assumption {e!r} ({given})", ORIGIN, 1, 1)
        out.append((e, c))
    if out and _sat([c for _, c in out]) == z3.unsat:
        raise KernelError(f"--assume {' and '.join(map(repr, exprs))}: no parameter values satisfy them together "
                          "(with the launch's argument values)", ORIGIN, 1, 1)
    return out


def _sat(fs):
    return SolverBudget(2.0, label="assume").solve(*fs)[0]

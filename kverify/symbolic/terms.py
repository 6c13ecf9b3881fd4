"""z3 term helpers of the symbolic engine: simplifying Boolean constructors, width fitting,
a simultaneous substitution with its argument arrays built once, and constraint keys.

Owns: how terms are built; nothing here knows about instructions or threads.
"""
from __future__ import annotations

import z3

TRUE = z3.BoolVal(True)
FALSE = z3.BoolVal(False)


def is_false(e) -> bool:
    return z3.is_false(e)


def _declared_name(e, ctx, d) -> str | None:
    """The name of function declaration ``d`` (a C pointer of ``e``'s context) when it is
    uninterpreted (a constant or function the kernel's symbols are), else None."""
    C = z3.z3core
    if C.Z3_get_decl_kind(ctx, d) != z3.Z3_OP_UNINTERPRETED:
        return None
    return z3.z3._symbol2py(e.ctx, C.Z3_get_decl_name(ctx, d))


def name(e) -> str:
    """``str(e)`` of a term; for an uninterpreted constant its name, read through z3's C API as
    ``Symbols`` reads names (7 us a call where z3's printer takes 25; loop summaries ask
    thousands)."""
    C = z3.z3core
    ctx, a = e.ctx_ref(), e.as_ast()
    if C.Z3_get_ast_kind(ctx, a) == z3.Z3_APP_AST and C.Z3_get_app_num_args(ctx, a) == 0:
        n = _declared_name(e, ctx, C.Z3_get_app_decl(ctx, a))
        if n is not None:
            return n
    return str(e)


def is_true(e) -> bool:
    return z3.is_true(e)


def _unique(xs):
    seen, out = set(), []
    for x in xs:
        if x.get_id() not in seen:
            seen.add(x.get_id())
            out.append(x)
    return out


def mk_and(*xs):
    xs = _unique([x for x in xs if not is_true(x)])
    if any(is_false(x) for x in xs):
        return FALSE
    if not xs:
        return TRUE
    return xs[0] if len(xs) == 1 else z3.And(*xs)


def mk_or(*xs):
    xs = _unique([x for x in xs if not is_false(x)])
    if any(is_true(x) for x in xs):
        return TRUE
    if not xs:
        return FALSE
    return xs[0] if len(xs) == 1 else z3.Or(*xs)


def mk_not(x):
    if is_true(x):
        return FALSE
    if is_false(x):
        return TRUE
    return z3.Not(x)


def mk_ite(c, a, b):
    if is_true(c) or a.eq(b):
        return a
    if is_false(c):
        return b
    return z3.If(c, a, b)


def fit(term, width: int):
    """Adapt a value to ``width`` bits (predicates become 0/1; wider values are truncated,
    narrower ones zero-extended)."""
    if width == 1 and z3.is_bool(term):
        return term
    if z3.is_bool(term):
        term = z3.If(term, z3.BitVecVal(1, 32), z3.BitVecVal(0, 32))
    if width == 1:
        return term != 0
    w = term.size()
    if w == width:
        return term
    if w > width:
        return z3.Extract(width - 1, 0, term)
    return z3.ZeroExt(width - w, term)


class Substitution:
    """Simultaneous substitution (e.g. of thread A's symbols by thread B's) with the
    argument arrays built once: ``z3.substitute`` re-checks every pair on every call."""

    def __init__(self, pairs):
        self.n = len(pairs)
        self.keep = list(pairs)
        self.frm = (z3.Ast * max(1, self.n))()
        self.to = (z3.Ast * max(1, self.n))()
        for i, (a, b) in enumerate(pairs):
            self.frm[i] = a.as_ast()
            self.to[i] = b.as_ast()

    def __call__(self, e):
        if not self.n:
            return e
        r = z3.Z3_substitute(e.ctx_ref(), e.as_ast(), self.n, self.frm, self.to)
        return z3.z3._to_expr_ref(r, e.ctx)


def keys(*consts) -> frozenset:
    """The names of the symbols a constraint constrains (a constraint matters to a query
    only when the query mentions one of them)."""
    return frozenset(c.decl().name() for c in consts)


class Symbols:
    """Names of the uninterpreted constants (and functions) in a term, memoized by AST id. The
    walk goes through z3's C API (no Python object per subterm); the roots asked about are kept
    alive, which keeps every subterm alive (z3 reuses the id of a freed term)."""

    def __init__(self):
        self.memo: dict = {}
        self.keep: list = []

    def of(self, *es) -> set:
        """The names in any of ``es`` (None skipped)."""
        out = set()
        for e in es:
            if e is not None:
                out |= self(e)
        return out

    def __call__(self, e) -> frozenset:
        memo = self.memo
        key = e.get_id()
        r = memo.get(key)
        if r is not None:
            return r
        self.keep.append(e)
        ctx = e.ctx_ref()
        C = z3.z3core
        get_id, kind_of, nargs, arg = C.Z3_get_ast_id, C.Z3_get_ast_kind, C.Z3_get_app_num_args, C.Z3_get_app_arg
        app = z3.Z3_APP_AST
        stack = [(e.as_ast(), key)]
        while stack:
            x, kx = stack[-1]
            if kx in memo:
                stack.pop()
                continue
            if kind_of(ctx, x) != app:
                memo[kx] = frozenset()
                stack.pop()
                continue
            n = nargs(ctx, x)
            kids = [arg(ctx, x, i) for i in range(n)]
            ids = [get_id(ctx, c) for c in kids]
            todo = [(c, i) for c, i in zip(kids, ids) if i not in memo]
            if todo:
                stack.extend(todo)
                continue
            n = _declared_name(e, ctx, C.Z3_get_app_decl(ctx, x))
            acc = set() if n is None else {n}
            for i in ids:
                acc |= memo[i]
            memo[kx] = frozenset(acc)
            stack.pop()
        return memo[key]

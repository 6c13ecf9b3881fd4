"""User-given summaries of body-less functions (``kverify check --extern-summary NAME=pure``,
``kverify.check(..., extern={"NAME": "pure"})``).

A kernel may call a function the module declares and never defines (``__device__ int
nondet(void);``): its body is elsewhere, or nowhere. Without a summary such a call leaves the
obligations ``unknown`` ("callee nondet() has no body in this module"). A summary is the user's
word for what the function does; the only kind is

    pure   reads and writes no memory, does not synchronize, returns an arbitrary value of its
           return type: a fresh unconstrained value per call and per thread

which is GPUVerify's own reading of a body-less function (Bugle declares it as a Boogie procedure
without body and without modifies clause). The symbolic engine models such a call as a fresh
value (``calls.Calls.call``); every proof that rests on it says "assuming nondet() is pure" in its
scope. The interpreter cannot run a call with an arbitrary result: with a summarized call in the
kernel it does not run, and the checks that need no values stand in (``verifier.uniform``).

``NAME`` is the function's name as written in the source (``nondet``), its C++ signature
(``nondet()``) or its PTX name (``_Z6nondetv``); ``*`` summarizes every body-less function the
kernel calls. A name that matches no body-less function of the module is bad input.
"""
from __future__ import annotations

from kverify.names import demangle
from kverify.semantics.ir.errors import KernelError
from kverify.semantics.ir.nodes import Instr, Sym
from kverify.semantics.ir.visit import instructions

#: summary kind -> what it means (the text the scopes and the report show)
KINDS = {"pure": "reads and writes no memory, does not synchronize, returns an arbitrary value"}
ORIGIN = "<command line>"
OPTION = "--extern-summary"


def parse(items) -> tuple:
    """``(("nondet", "pure"), ...)`` from ``["nondet=pure", "*=pure"]`` or a mapping
    ``{"nondet": "pure"}``; bad syntax or an unknown kind is a ``KernelError`` (exit 2)."""
    pairs = list(items.items()) if isinstance(items, dict) else list(items or ())
    out = []
    for item in pairs:
        if isinstance(item, tuple) and len(item) == 2:
            name, kind = item
        elif not isinstance(item, str) or "=" not in item:
            raise KernelError(f"{OPTION} {item!r}: expected NAME=KIND (KIND: {', '.join(KINDS)}; NAME a body-less "
                              "function the kernel calls, or * for every one)", ORIGIN, 0, 0)
        else:
            name, _, kind = item.partition("=")
        name, kind = str(name).strip(), str(kind).strip()
        if not name:
            raise KernelError(f"{OPTION} {name}={kind}: the function name is empty (NAME=KIND, or *=KIND)", ORIGIN, 0, 0)
        if kind not in KINDS:
            raise KernelError(f"{OPTION} {name}={kind}: unknown summary {kind!r} (known: {', '.join(KINDS)})",
                              ORIGIN, 0, 0)
        out.append((name, kind))
    return tuple(out)


def bodyless_callees(module, fns=None) -> dict:
    """``{PTX name: C++ name}`` of the functions a direct ``call`` of ``fns`` (default: every
    function of the module) names and the module does not define: not the annotation markers
    (``ir.gpuverify``), which kverify gives a meaning of its own."""
    from kverify.semantics.ir import gpuverify as gv

    defined = {k.name for k in module.kernels}
    out = {}
    for fn in (module.kernels if fns is None else fns):
        for ins in instructions(fn.body):
            if not isinstance(ins, Instr) or ins.row is None or ins.row.flow != "call":
                continue
            for o in ins.operands:
                if isinstance(o, Sym) and o.name not in defined and not gv.is_marker(o.name):
                    out[o.name] = demangle(o.name)
    return out


def _matches(name: str, ptx: str, shown: str) -> bool:
    return name in ("*", ptx, shown, shown.split("(", 1)[0])


def resolve(module, summaries) -> dict:
    """``{PTX name: kind}`` for the body-less functions of ``module`` that ``summaries`` (``parse``'s
    pairs) name; a name (other than ``*``) that names none of them is a ``KernelError``."""
    if not summaries:
        return {}
    callees = bodyless_callees(module)
    defined = {k.name: demangle(k.name) for k in module.kernels}
    out = {}
    for name, kind in summaries:
        hits = [p for p, shown in callees.items() if _matches(name, p, shown)]
        if not hits and name != "*":
            if any(_matches(name, p, shown) for p, shown in defined.items()):
                raise KernelError(f"{OPTION} {name}={kind}: {name} has a body in this module (a summary is for "
                                  "functions the module declares without defining)", ORIGIN, 0, 0)
            known = ", ".join(sorted(callees.values())) or "none"
            raise KernelError(f"{OPTION} {name}={kind}: no body-less function {name!r} is called in {module.path} "
                              f"(body-less functions it calls: {known})", ORIGIN, 0, 0)
        for p in hits:
            out.setdefault(p, kind)
    return out


def describe(ptx: str, kind: str) -> str:
    """``assuming nondet() is pure (reads and writes no memory, ...)``."""
    return f"assuming {demangle(ptx)} is {kind} ({KINDS[kind]})"

"""Re-prove exported SMT-LIB2 queries (``check --export-smt``) with a second solver (cvc5, the
``recheck`` extra): each file ``...OBLIGATION.N.RESULT.smt2`` is answered again and compared
with z3's RESULT. A disagreement (or a file cvc5 cannot answer) is returned with its reason."""
from __future__ import annotations

import os


def _cvc5_answer(path: str) -> str:
    import cvc5

    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    parser = cvc5.InputParser(solver)
    with open(path) as fh:
        text = fh.read()
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, "(set-logic ALL)\n" + text, path)
    sm = parser.getSymbolManager()
    answers = []
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        out = cmd.invoke(solver, sm).strip()
        if out in ("sat", "unsat", "unknown"):
            answers.append(out)
    return answers[-1] if answers else "unknown"


def recheck(directory: str, prefix: str = "", solver: str = "cvc5") -> list[tuple[str, str, str, str]]:
    """``[(file, obligation label, z3 answer, cvc5 answer)]`` for every exported query of
    ``prefix`` whose answers differ (a ``RuntimeError`` when cvc5 is not installed)."""
    if solver != "cvc5":
        raise ValueError(f"unknown re-check solver {solver!r} (have cvc5)")
    try:
        import cvc5  # noqa: F401
    except ImportError:
        raise RuntimeError("cvc5 is not installed (pip install 'kverify[recheck]')") from None
    bad = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".smt2") or not name.startswith(prefix + "."):
            continue
        parts = name[len(prefix) + 1:].split(".")
        label, z3_answer = ".".join(parts[:-3]), parts[-2]
        try:
            got = _cvc5_answer(os.path.join(directory, name))
        except Exception as e:  # a parse error is a disagreement too: not re-proved
            got = f"error: {e}"
        if got != z3_answer:
            bad.append((name, label, z3_answer, got))
    return bad

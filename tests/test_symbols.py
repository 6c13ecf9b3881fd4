"""``Symbols``: the names of the uninterpreted constants and functions in a term, walked through
z3's C API and memoized by AST id (the constraint keys every solver query is cut down by)."""
import z3

from kverify.symbolic.terms import Symbols


def test_names_of_constants_and_functions_and_none_inside_quantifiers_or_values():
    x, y, z = z3.BitVecs("x y z", 32)
    f = z3.Function("f", z3.BitVecSort(32), z3.BitVecSort(32))
    p = z3.Bool("p")
    s = Symbols()
    assert s(x + 1) == {"x"}
    assert s(z3.If(p, f(x), y * 3)) == {"p", "f", "x", "y"}
    assert s(z3.Concat(z3.Extract(15, 0, z), z3.Extract(15, 0, f(y)))) == {"z", "f", "y"}
    assert s(z3.BitVecVal(7, 32) + 3) == frozenset()
    assert s(z3.ForAll([x], x > y)) == frozenset()  # a quantifier is not walked (as before: no app)
    assert s.of(x, None, y + z) == {"x", "y", "z"}


def test_shared_subterms_are_walked_once_and_answers_are_memoized_by_id():
    x, y = z3.BitVecs("x y", 32)
    t = x + y
    for i in range(60):  # a DAG of 2**60 paths: a walk per path would never end
        t = z3.If(t == i, t, t + 1)
    s = Symbols()
    assert s(t) == {"x", "y"}
    n = len(s.memo)
    assert n < 500
    assert s(t) is s(t) and len(s.memo) == n


def test_name_is_str_for_every_term_and_the_constant_name_for_a_constant():
    """``name`` is ``str`` without z3's printer for a constant; what Symbols calls the constant."""
    from kverify.symbolic.terms import name

    x, k = z3.BitVec("h0.%r1040!A", 32), z3.BitVec("k!3", 64)
    f = z3.Function("f", z3.BitVecSort(32), z3.BitVecSort(32))
    for t in (x, k, z3.Bool("p"), x + 1, f(x), z3.BitVecVal(5, 32), z3.And(z3.Bool("p"), z3.Bool("q")),
              z3.ForAll([x], x > 0)):
        assert name(t) == str(t)
    assert {name(x), name(k)} == set(Symbols().of(x, k)) == {"h0.%r1040!A", "k!3"}

"""PTX front end, fast path: function bodies read with one master regex per statement, and
the module level (header, parameter lists, module variables) by a small reader, producing
exactly the raw statements ``ToRaw`` builds for them (``ptx_grammar``); any shape it does not
fully understand goes to lark unchanged. A module read whole by the fast path never loads lark.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .nodes import Imm, Loc, Neg, PairOp, ParenList, Reg, Sink, Sym, VecOp
from .ptx_raw import _CACHE_LIMIT, _float, _int, _Raw, _scan_files, _Tok, literals, terminals

# --------------------------------------------------------------------------- fast path
# Function bodies are where nearly all of a module's tokens are, and nvcc and Triton write
# them in a few regular shapes. The fast path reads each body with one master regex per
# statement (``_STMT``: label, instruction, ``.loc``, state-space declaration, ``.pragma``,
# scope braces) and a small operand reader, producing exactly the raw statements ``ToRaw``
# builds for them. It accepts only what it fully understands: any other shape makes that
# body go to lark unchanged. The rest of the module (header, parameter lists, module
# variables, ``.section`` blocks) is read with the fast-read bodies blanked out (newlines
# kept, so every position stays the same) by ``_Module``, or by lark where ``_Module`` does not
# understand it, and the bodies are spliced back in. Any error, anywhere, is reported by
# parsing the whole text with lark.
#
# The token regexes are lark's own terminals (``ptx.lark``), applied where lark's
# contextual lexer would apply them; every token must end at a character that cannot
# continue it, so the tokens are the ones lark would produce.

class _NoFast(Exception):
    """The fast path does not handle this text; lark reads it."""


_W = r"[ \t\f\r\n]"
_KEYWORDS = frozenset({"if", "else", "trip", "loop", "iv", "block", "break", "continue",
                       "blocking", "generic"})


class _Fast:
    """Compiled regexes of the fast path, built from the grammar's terminals."""

    def __init__(self):
        term = terminals()
        name, reg, int_, flt = term["NAME"], term["REG"], term["INT"], term["FLOAT"]
        self.NAME = re.compile(name)
        self.REG = re.compile(reg)
        self.INT = re.compile(int_)
        self.FLOAT = re.compile(flt)
        self.DIRECTIVE = re.compile(term["DIRECTIVE"])
        self.WS = re.compile(_W + "*")
        # one blank per repetition: a long run of blanks before a character no statement starts
        # with then fails in linear time, not by trying every split of the run (``(?:\s+)*``
        # backtracks exponentially)
        skip = r"(?:[ \t\f\r\n]|//[^\n]*|/\*[\s\S]*?\*/)*"
        w = _W
        self.STMT = re.compile(
            skip + "(?:"
            rf"(?P<I>(?:@{w}*(?P<neg>!{w}*)?(?=(?P<g>{reg}|{name}))(?P=g){w}*)?"
            rf"(?=(?P<op>{name}))(?P=op)(?:(?P<colon>{w}*:)|(?P<args>[^;]*);))"
            rf"|(?P<C>\.loc{w}+(?P<l1>{int_}){w}+(?P<l2>{int_}){w}+(?P<l3>{int_})(?![\w$.]))"
            rf"|(?P<D>{term['SPACE_DIR']})"
            r"|(?P<O>\{)|(?P<E>\})"
            rf'|(?P<P>\.pragma{w}*"[^"\n]*"(?:{w}*,{w}*"[^"\n]*")*{w}*;)'
            r"|(?P<Z>\Z))")
        # one ``, function_name NAME`` / ``, inlined_at INT INT INT`` tail item of .loc
        self.LOCX = re.compile(
            rf"{w}*,{w}*(?P<key>{name}){w}+(?:(?=(?P<n>{name}))(?P=n)(?![\w$.:])"
            rf"|(?P<i1>{int_}){w}+(?P<i2>{int_}){w}+(?P<i3>{int_})(?![\w$.]))")
        self.STRING = re.compile(term["STRING"])
        self.SECTION_NAME = re.compile(term["SECTION_NAME"])
        # the module level's directives, as the grammar names them (``_Module``)
        self.VNUM = re.compile(term["VNUM"])
        self.LINKAGE, self.SPACE_DIR, self.PERF_DIR = (re.compile(term[t]) for t in ("LINKAGE", "SPACE_DIR", "PERF_DIR"))
        self.LITERALS = {t: literals()[t] for t in _LITERALS}
        # operand lists that split at every comma: no vectors, lists, pairs or negations
        self.COMPLEX = re.compile(r"[{}()|!/\"]")
        # module level: function bodies are the braces after .entry/.func
        self.TOP = re.compile(r'//[^\n]*|/\*[\s\S]*?\*/|"[^"\n]*"|\.section\b'
                              r'|(?<![\w$])\.(?:entry|func)\b|[{};]')
        self.INNER = re.compile(r'//[^\n]*|/\*[\s\S]*?\*/|"[^"\n]*"|[{}]')


@lru_cache(maxsize=None)
def _fast() -> _Fast:
    return _Fast()


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_INT_START = frozenset("-0123456789")
_SINK = Sink()
_NOT_SIMPLE = object()
_simple_cache: dict = {}   # operand text -> operand (ToRaw's value) or _NOT_SIMPLE
_args_cache: dict = {}     # operand list text -> tuple of operands
_int_cache: dict = {}


def _int_c(s: str) -> int:
    v = _int_cache.get(s)
    if v is None:
        v = _int_cache[s] = _int(s)
    return v


def _simple_op(p: str):
    """The operand of a one-token operand text, as ToRaw builds it, or _NOT_SIMPLE."""
    v = _simple_cache.get(p)
    if v is not None:
        return v
    if len(_simple_cache) > _CACHE_LIMIT:
        _simple_cache.clear()
    F = _fast()
    v = _NOT_SIMPLE
    n = len(p)
    m = F.FLOAT.match(p)
    if m:
        if m.end() == n:
            v = _float(p)
    elif p:
        c = p[0]
        if c == "%":
            m = F.REG.match(p)
            if m and m.end() == n:
                v = Reg(p)
        elif c in _NAME_START:
            m = F.NAME.match(p)
            if m and m.end() == n:
                v = _SINK if p == "_" else ("name", p)
        elif c in _INT_START:
            m = F.INT.match(p)
            if m and m.end() == n:
                v = Imm(_int(p))
    if v is _NOT_SIMPLE and p:  # an address or ``sym+4``: one operand of the full reader
        try:
            ops = _Ops(p).read()
        except _NoFast:
            ops = ()
        if len(ops) == 1:
            v = ops[0]
    _simple_cache[p] = v
    return v


class _Ops:
    """Recursive-descent reader of an operand list (the ``operands`` rule)."""

    __slots__ = ("s", "n", "F")

    def __init__(self, s):
        self.s, self.n, self.F = s, len(s), _fast()

    def ws(self, i):
        return self.F.WS.match(self.s, i).end()

    def read(self):
        s, n = self.s, self.n
        out = []
        i = self.ws(0)
        if i == n:
            return out
        while True:
            c = s[i]
            if c == "[":
                v, i = self.address(i + 1)
            elif c == "{":
                v, i = self.vector(i + 1)
            elif c == "(":
                v, i = self.paren(i + 1)
            else:
                v, i = self.simple(i)
                i = self.ws(i)
                if i < n and s[i] == "|":
                    w, i = self.simple(self.ws(i + 1))
                    v = PairOp(v, w)
            out.append(v)
            i = self.ws(i)
            if i == n:
                return out
            if s[i] != ",":
                raise _NoFast
            i = self.ws(i + 1)
            if i == n:
                raise _NoFast

    def token(self, rx, i):
        m = rx.match(self.s, i)
        if m is None:
            raise _NoFast
        j = m.end()
        if j < self.n and self.s[j] not in " \t\f\r\n,;|]})+-<>":
            raise _NoFast  # the token is glued to something: leave it to lark
        return m.group(), j

    def simple(self, i):
        s, n, F = self.s, self.n, self.F
        if i >= n:
            raise _NoFast
        m = F.FLOAT.match(s, i)
        if m:
            t, j = self.token(F.FLOAT, i)
            return _float(t), j
        c = s[i]
        if c == "%":
            t, j = self.token(F.REG, i)
            return Reg(t), j
        if c in _NAME_START:
            t, j = self.token(F.NAME, i)
            k = self.ws(j)
            if k < n and s[k] in "+-":
                lit, j = self.token(F.INT, self.ws(k + 1))
                v = _int_c(lit)
                return Sym(t, v if s[k] == "+" else -v), j
            return (_SINK if t == "_" else ("name", t)), j
        if c in _INT_START:
            t, j = self.token(F.INT, i)
            return Imm(_int_c(t)), j
        if c == "!":
            k = self.ws(i + 1)
            if k < n and s[k] == "%":
                t, j = self.token(F.REG, k)
                return Neg(Reg(t)), j
            if k < n and s[k] in _NAME_START:
                t, j = self.token(F.NAME, k)
                return ("neg-name", t), j
        raise _NoFast

    def atom(self, i):
        s, n, F = self.s, self.n, self.F
        if i >= n:
            raise _NoFast
        c = s[i]
        if c == "%":
            t, j = self.token(F.REG, i)
            return Reg(t), j
        if c in _NAME_START:
            t, j = self.token(F.NAME, i)
            return (_SINK if t == "_" else ("name", t)), j
        if c in _INT_START:
            t, j = self.token(F.INT, i)
            return Imm(_int_c(t)), j
        raise _NoFast

    def address(self, i):
        s, n = self.s, self.n
        base, off, sign = None, 0, 1
        x, i = self.atom(self.ws(i))
        while True:
            if isinstance(x, Imm):
                off += sign * x.value
            elif base is None:
                base = x
            else:
                raise _NoFast  # two bases: ToRaw's error, raised by the lark path
            i = self.ws(i)
            if i < n and s[i] in "+-":
                sign = 1 if s[i] == "+" else -1
                x, i = self.atom(self.ws(i + 1))
                continue
            break
        coords = ()
        if i < n and s[i] == ",":
            i = self.ws(i + 1)
            if i >= n or s[i] != "{":
                raise _NoFast
            v, i = self.vector(i + 1)
            coords = v.elems
            i = self.ws(i)
        if i >= n or s[i] != "]":
            raise _NoFast
        return ("addr", base, off, coords), i + 1

    def vector(self, i):
        s, n = self.s, self.n
        out = []
        while True:
            v, i = self.simple(self.ws(i))
            out.append(v)
            i = self.ws(i)
            if i < n and s[i] == ",":
                i += 1
                continue
            if i < n and s[i] == "}":
                return VecOp(tuple(out)), i + 1
            raise _NoFast

    def paren(self, i):
        s, n = self.s, self.n
        out = []
        i = self.ws(i)
        if i < n and s[i] == ")":
            return ParenList(()), i + 1
        while True:
            v, i = self.simple(self.ws(i))
            out.append(v)
            i = self.ws(i)
            if i < n and s[i] == ",":
                i += 1
                continue
            if i < n and s[i] == ")":
                return ParenList(tuple(out)), i + 1
            raise _NoFast


def _operands(args: str) -> tuple:
    ops = _args_cache.get(args)
    if ops is not None:
        return ops
    if len(_args_cache) > _CACHE_LIMIT:
        _args_cache.clear()
    ops = None
    if _fast().COMPLEX.search(args) is None:
        parts = args.split(",")
        vals = [_simple_op(p.strip(" \t\f\r\n")) for p in parts]
        if _NOT_SIMPLE not in vals:
            ops = tuple(vals)
        elif len(parts) == 1 and not parts[0].strip(" \t\f\r\n"):
            ops = ()
    if ops is None:
        ops = tuple(_Ops(args).read())
    _args_cache[args] = ops
    return ops


def _fast_body(text: str, a: int, b: int, line: int, files: dict):
    """The statements of the function body ``text[a:b]`` (inside its braces) as ToRaw
    builds them; ``line`` is the line number at ``a``. Raises _NoFast."""
    F = _fast()
    match = F.STMT.match
    count = text.count
    rfind = text.rfind
    last = a
    cur = (None, 0, 0)
    items: list = []
    stack = []
    pos = a
    while True:
        m = match(text, pos, b)
        if m is None:
            raise _NoFast
        kind = m.lastgroup
        if kind == "I":  # an instruction or a label
            p = m.start("op")
            line += count("\n", last, p)
            last = p
            g, neg, op, colon, args = m.group("g", "neg", "op", "colon", "args")
            if op in _KEYWORDS:
                raise _NoFast
            if colon is not None:
                if g is not None:
                    raise _NoFast
                items.append(_Raw("label", op, line, p - rfind("\n", 0, p)))
            else:
                f, ln, col = cur
                items.append(_Raw("instr", (None if g is None else (g, neg is not None), op,
                                            _operands(args) if args else (), Loc(f, ln, col, line)),
                                  line, p - rfind("\n", 0, p)))
        elif kind == "C":
            fi, ln, col = _int_c(m.group("l1")), _int_c(m.group("l2")), _int_c(m.group("l3"))
            cur = (files.get(fi, f"<file {fi}>"), ln, col) if ln else (None, 0, 0)
            items.append(_Raw("loc", None))
            e = m.end()
            while True:
                mx = F.LOCX.match(text, e, b)
                if mx is None:
                    break
                if mx.group("i1") is not None and mx.group("key") == "inlined_at" and _int_c(mx.group("i2")):
                    # inlined code: report the call site in the kernel
                    fi2 = _int_c(mx.group("i1"))
                    cur = (files.get(fi2, f"<file {fi2}>"), _int_c(mx.group("i2")), _int_c(mx.group("i3")))
                e = mx.end()
            m = None
            pos = e
            continue
        elif kind == "D":
            raw, pos, line, last = _fast_decl(text, m.end(), b, m.group("D")[1:], line, last)
            items.append(raw)
            continue
        elif kind == "O":
            stack.append(items)
            items = []
        elif kind == "E":
            if not stack:
                raise _NoFast
            inner = items
            items = stack.pop()
            items.append(_Raw("scope", inner))
        elif kind == "P":
            items.append(_Raw("pragma", tuple(s.strip('"') for s in F.STRING.findall(m.group("P")))))
        else:  # end of the body
            if stack:
                raise _NoFast
            return items
        pos = m.end()


def _fast_decl(text, i, b, space, line, last):
    """``SPACE_DIR decl_attr* declarator ("," declarator)* ";"`` from just after the
    space directive (no initializer)."""
    F = _fast()
    ws = F.WS.match
    attrs = []
    while True:
        i = ws(text, i, b).end()
        if i >= b:
            raise _NoFast
        c = text[i]
        if c != ".":
            break
        if text.startswith(".align", i):
            j = i + 6
            if j < b and (text[j].isalnum() or text[j] in "_:$"):
                raise _NoFast
            m = F.INT.match(text, ws(text, j, b).end(), b)
            if m is None or (m.end() < b and text[m.end()] not in " \t\f\r\n"):
                raise _NoFast
            attrs.append(("align", _int(m.group())))
            i = m.end()
        elif text.startswith(".ptr", i):
            j = i + 4
            if j < b and (text[j].isalnum() or text[j] in "_:$"):
                raise _NoFast
            attrs.append(("ptr", None))
            i = j
        else:
            m = F.DIRECTIVE.match(text, i, b)
            if m is None or (m.end() < b and text[m.end()] not in " \t\f\r\n."):
                raise _NoFast
            attrs.append(("dir", m.group()[1:]))
            i = m.end()
    decls = []
    while True:
        i = ws(text, i, b).end()
        if i >= b:
            raise _NoFast
        c = text[i]
        if c == "%":
            m = F.REG.match(text, i, b)
        elif c in _NAME_START:
            m = F.NAME.match(text, i, b)
        else:
            raise _NoFast
        if m is None:
            raise _NoFast
        j = m.end()
        if j < b and text[j] not in " \t\f\r\n<[,;":
            raise _NoFast
        line += text.count("\n", last, i)
        last = i
        tok_line, tok_col = line, i - text.rfind("\n", 0, i)
        mods = []
        j = ws(text, j, b).end()
        if j < b and text[j] == "<":
            mi = F.INT.match(text, ws(text, j + 1, b).end(), b)
            if mi is None:
                raise _NoFast
            j = ws(text, mi.end(), b).end()
            if j >= b or text[j] != ">":
                raise _NoFast
            mods.append(("range", _int(mi.group())))
            j = ws(text, j + 1, b).end()
        while j < b and text[j] == "[":
            j = ws(text, j + 1, b).end()
            mi = F.INT.match(text, j, b)
            if mi is not None:
                j = ws(text, mi.end(), b).end()
            if j >= b or text[j] != "]":
                raise _NoFast
            mods.append(("array", _int(mi.group()) if mi is not None else None))
            j = ws(text, j + 1, b).end()
        decls.append((m.group(), mods, tok_line, tok_col))
        if j < b and text[j] == ",":
            i = j + 1
            continue
        if j < b and text[j] == ";":
            raw = _Raw("decl", ([space], attrs, decls, None), decls[0][2], decls[0][3])
            return raw, j + 1, line, last
        raise _NoFast


def _find_bodies(text: str) -> list:
    """``(header, open, close)`` offsets of each function body: ``header`` is where the
    ``.entry``/``.func`` directive starts, ``open``/``close`` are its braces."""
    F = _fast()
    top, inner = F.TOP.search, F.INNER.search
    out = []
    pos, depth, header = 0, 0, -1
    while True:
        m = top(text, pos)
        if m is None:
            return out
        tok = m.group()
        pos = m.end()
        c = tok[0]
        if c == "{":
            if header >= 0 and depth == 0:
                d = 1
                while d:
                    m2 = inner(text, pos)
                    if m2 is None:
                        return out
                    pos = m2.end()
                    t = m2.group()
                    if t == "{":
                        d += 1
                    elif t == "}":
                        d -= 1
                out.append((header, m.start(), pos - 1))
                header = -1
            else:
                depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";":
            if depth == 0:
                header = -1
        elif tok == ".section":
            i = text.find("{", pos)
            j = text.find("}", i) if i >= 0 else -1
            if j < 0:
                return out
            pos = j + 1
        elif tok in (".entry", ".func"):
            if depth == 0:
                header = m.start()


def _blank(chunk: str) -> str:
    """Whitespace with the same newlines and the same length of last line."""
    k = chunk.count("\n")
    if not k:
        return " " * len(chunk)
    return "\n" * k + " " * (len(chunk) - chunk.rfind("\n") - 1)


_BIG_INIT = re.compile(r"=\s*\{([0-9,\s{}]{4096,}?)\}\s*;")


def _blank_initializers(text: str):
    """``text`` with each large all-decimal brace initializer (``= {202, 29, ...};``: cuRAND's
    tables, 100,000 bytes each) cut to ``{0`` and blanks of the same length, and the flat lists
    of the values cut, by the line of their declaration: lark lexes a blank run as one token."""
    inits, out, last = {}, [], 0
    for m in _BIG_INIT.finditer(text):
        body = m.group(1)
        if "\n" in body:
            continue
        line = text.count("\n", 0, m.start()) + 1
        if line in inits:
            raise _NoFast
        inits[line] = [_int(t) for t in re.findall(r"[0-9]+", body)]
        out.append(text[last:m.start(1)])
        out.append("0" + " " * (len(body) - 1))
        last = m.end(1)
    out.append(text[last:])
    return "".join(out), inits


def _fast_raw(text: str, path: str):
    """``parse_raw(text, path)`` through the fast path."""
    files = _scan_files(text)
    try:
        bodies = {}
        pieces = []
        last = 0
        line, lpos = 1, 0
        shift = 0  # how much shorter the text before ``last`` is once bodies are blanked
        for header, a, b in _find_bodies(text):
            line += text.count("\n", lpos, a + 1)
            lpos = a + 1
            try:
                items = _fast_body(text, a + 1, b, line, files)
            except _NoFast:
                continue
            bodies[header - shift] = items  # the header's position in the blanked text
            pieces.append(text[last:a + 1])
            blank = _blank(text[a + 1:b])
            pieces.append(blank)
            shift += (b - a - 1) - len(blank)
            last = b
        pieces.append(text[last:])
        blanked, inits = _blank_initializers("".join(pieces))
        try:
            raw = _Module(blanked).read()
        except _NoFast:
            from .ptx_grammar import _inline_parse

            raw = _inline_parse(blanked, path, "module", files)
        for it in raw:
            if isinstance(it, _Raw) and it.kind == "decl" and it.line in inits:
                space, attrs, decls, _ = it.data
                it.data = (space, attrs, decls, inits.pop(it.line))
        if inits:
            raise _NoFast
        used = 0
        for it in raw:
            if isinstance(it, tuple) and it[0] == "function":
                parts = it[1]
                hdr = next((p.start_pos for p in parts if isinstance(p, str)  # a token
                            and p.type in ("ENTRY", "FUNC")), None)
                items = bodies.get(hdr)
                if items is None:
                    continue
                for k, p in enumerate(parts):
                    if isinstance(p, tuple) and p[0] == "body":
                        if p[1]:
                            raise _NoFast
                        parts[k] = ("body", items)
                        used += 1
                        break
        if used != len(bodies):
            raise _NoFast
        return raw, files
    except Exception:
        # anything unexpected (or an error to report): the whole text through lark
        from .ptx_grammar import _inline_parse

        return _inline_parse(text, path, "module", files), files


# --------------------------------------------------------------------------- module level
#: the grammar's string terminals of priority 3: lark lexes them off the front of a longer
#: directive (``.align16`` is ``.align`` ``16``), which this reader leaves to lark
_LITERALS = ("ENTRY", "FUNC", "ALIGN", "PTR", "BRANCHTARGETS", "CALLPROTOTYPE")
_HEADERS = frozenset((".version", ".target", ".address_size"))


class _Module:
    """Reader of the module level of a text whose function bodies are blank (``_fast_raw``):
    the ``module`` rule of ``ptx.lark`` down to the bodies, giving the list ``ToRaw`` gives.
    Raises ``_NoFast`` at anything it does not fully understand, a non-blank body included."""

    __slots__ = ("s", "i", "F", "_line", "_lpos")

    _SKIP = re.compile(r"(?:[ \t\f\r\n]+|//[^\n]*|/\*[\s\S]*?\*/)*")
    _WORD = re.compile(r"\.[A-Za-z_]\w*")

    def __init__(self, s: str):
        self.s, self.i, self.F = s, 0, _fast()
        self._line, self._lpos = 1, 0

    # tokens
    def skip(self):
        self.i = self._SKIP.match(self.s, self.i).end()

    def peek(self) -> str:
        self.skip()
        return self.s[self.i:self.i + 1]

    def at(self, i: int) -> tuple:
        """(line, column) of offset ``i``, 1-based (offsets are asked in increasing order)."""
        self._line += self.s.count("\n", self._lpos, i)
        self._lpos = i
        return self._line, i - self.s.rfind("\n", 0, i)

    def _end(self, j: int) -> int:
        """``j``, where a token ends: not glued to a character that could continue it."""
        if j < len(self.s) and (self.s[j].isalnum() or self.s[j] in "_$.:"):
            raise _NoFast
        return j

    def isa(self, terminal: str, w) -> bool:
        """Whether directive ``w`` is one token of the grammar's ``terminal``."""
        return w is not None and getattr(self.F, terminal).fullmatch(w) is not None

    def listed(self, read) -> list:
        """``read()`` once, then again after each comma."""
        out = [read()]
        while self.peek() == ",":
            self.i += 1
            out.append(read())
        return out

    def punct(self, c: str):
        if self.peek() != c:
            raise _NoFast
        self.i += 1

    def word(self) -> str | None:
        """The directive at the cursor (``.entry``), or None when there is none."""
        self.skip()
        m = self._WORD.match(self.s, self.i)
        if m is None:
            return None
        w = m.group()
        if any(w != lit and w.startswith(lit) for lit in self.F.LITERALS.values()):
            raise _NoFast
        self.i = self._end(m.end())
        return w

    def regex(self, rx) -> tuple:
        """(text, offset) of the token of ``rx`` at the cursor."""
        self.skip()
        m = rx.match(self.s, self.i)
        if m is None:
            raise _NoFast
        self.i = self._end(m.end())
        return m.group(), m.start()

    def name(self, kind="NAME") -> _Tok:
        t, p = self.regex(self.F.NAME if kind == "NAME" else self.F.REG)
        if t in _KEYWORDS:
            raise _NoFast  # lark retypes a keyword: an error, reported by lark
        return _Tok(kind, t, p, *self.at(p))

    def int(self) -> int:
        return _int(self.regex(self.F.INT)[0])

    # rules
    def read(self) -> list:
        out, top = [], False
        while True:
            self.skip()
            if self.i == len(self.s):
                return out
            w = self.word()
            if w in _HEADERS:
                if top:
                    raise _NoFast
                if w == ".version":
                    out.append(("version", self.regex(self.F.VNUM)[0]))
                elif w == ".target":
                    out.append(("target", tuple(str(x) for x in self.listed(self.name))))
                else:
                    out.append(("address_size", self.int()))
                continue
            top = True
            if w == ".file":
                out.append(self.file())
            elif w == ".section":
                self.regex(self.F.SECTION_NAME)
                self.punct("{")
                j = self.s.find("}", self.i)
                if j < 0 or "{" in self.s[self.i:j]:
                    raise _NoFast
                self.i = j + 1
                out.append(("section", None))
            else:
                link = []
                while self.isa("LINKAGE", w):
                    link.append(w[1:])
                    w = self.word()
                if w in (self.F.LITERALS["ENTRY"], self.F.LITERALS["FUNC"]):
                    out.append(("function", [("linkage", x) for x in link] + self.function(w)))
                elif self.isa("SPACE_DIR", w):
                    raw = self.var_core(w)
                    raw.data = (link + raw.data[0],) + raw.data[1:]
                    out.append(raw)
                else:
                    raise _NoFast

    def file(self) -> tuple:
        n = self.int()
        t, _ = self.regex(self.F.STRING)
        if self.peek() == ",":  # a timestamp and a size, which nothing reads
            self.i += 1
            self.int()
            if self.peek() == ",":
                self.i += 1
                self.int()
        return ("file", n, t.strip('"'))

    def function(self, w: str) -> list:
        p = self.i - len(w)  # the cursor is at the end of ``w``
        parts = [_Tok("ENTRY" if w == self.F.LITERALS["ENTRY"] else "FUNC", w, p, *self.at(p))]
        if self.peek() == "(":
            rets = self.params()
            if not rets:
                raise _NoFast
            parts.append(("rets", rets))
        parts.append(self.name())
        if self.peek() == "(":
            parts.append(("params", self.params()))
        while True:
            c = self.peek()
            if c == "{":
                j = self.s.find("}", self.i)
                if j < 0 or self.s[self.i + 1:j].strip():
                    raise _NoFast  # a body lark reads: left to lark
                self.i = j + 1
                parts.append(("body", []))
                return parts
            if c == ";":
                self.i += 1
                return parts
            d = self.word()
            if self.isa("PERF_DIR", d):
                vals = self.listed(self.int) if self.peek() in _INT_START else []
                parts.append(("perf", d[1:], tuple(vals)))
            elif d == ".pragma":
                strs = self.listed(lambda: self.regex(self.F.STRING)[0])
                self.punct(";")
                parts.append(("perf", "pragma", tuple(x.strip('"') for x in strs)))
            else:
                raise _NoFast

    def params(self) -> list:
        self.punct("(")
        if self.peek() == ")":
            self.i += 1
            return []
        out = self.listed(self.param)
        self.punct(")")
        return out

    def param(self) -> tuple:
        w = self.word()
        if w not in (".param", ".reg"):
            raise _NoFast
        attrs = self.attrs()
        nm = self.name()
        arr = self.array() if w == ".param" and self.peek() == "[" else None
        return (str(nm), attrs, arr[1] if arr else None, nm.line, nm.column)

    def attrs(self) -> list:
        """``decl_attr*``: ``.align N``, ``.ptr``, and directives."""
        out = []
        while self.peek() == ".":
            w = self.word()
            if w is None:
                raise _NoFast
            if w == self.F.LITERALS["ALIGN"]:
                out.append(("align", self.int()))
            elif w == self.F.LITERALS["PTR"]:
                out.append(("ptr", None))
            elif w in self.F.LITERALS.values() or self.isa("LINKAGE", w) or self.isa("PERF_DIR", w):
                raise _NoFast  # a terminal of its own elsewhere: left to lark
            else:  # a state space too (``.ptr .global``): lark lexes it as a directive here
                out.append(("dir", w[1:]))
        return out

    def array(self) -> tuple:
        self.punct("[")
        n = None if self.peek() == "]" else self.int()
        self.punct("]")
        return ("array", n)

    def declarator(self) -> tuple:
        nm = self.name("REG" if self.peek() == "%" else "NAME")
        mods = []
        if self.peek() == "<":
            self.i += 1
            mods.append(("range", self.int()))
            self.punct(">")
        while self.peek() == "[":
            mods.append(self.array())
        return (str(nm), mods, nm.line, nm.column)

    def var_core(self, w: str) -> _Raw:
        attrs = self.attrs()
        decls = self.listed(self.declarator)
        init = None
        if self.peek() == "=":
            self.i += 1
            init = self.init_item()
        self.punct(";")
        return _Raw("decl", ([w[1:]], attrs, decls, init), decls[0][2], decls[0][3])

    def init_item(self) -> list:
        """One ``init_item``, flattened as ``ToRaw.initializer`` flattens it."""
        c = self.peek()
        if c == "{":
            self.i += 1
            out = [x for item in self.listed(self.init_item) for x in item]
            self.punct("}")
            return out
        if c in _INT_START:
            m = self.F.FLOAT.match(self.s, self.i)
            if m:
                self.i = self._end(m.end())
                return [_float(m.group())]
            return [self.int()]
        if self.s.startswith("generic", self.i):  # ``generic(NAME)``; a name so spelled is lark's
            self.i += len("generic")
            self.punct("(")
            x = self.name()
            self.punct(")")
            return [f"generic({x})"]
        if c in _NAME_START:
            nm = self.name()
            return [_SINK if nm == "_" else ("name", str(nm))]
        raise _NoFast

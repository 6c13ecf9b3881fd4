"""Structuring: from a CFG to a structured body of loops, ifs and blocks.

Dominator tree and natural loops decide where each block's code goes (the construction of
Ramsey, "Beyond Relooper", ICFP 2022, with loop exits placed after their loop): a forward
edge to a join point is ``Break``, a back edge is ``Continue``, anything else is inlined.
Irreducible control flow is rejected. The result is simplified (redundant breaks and unused
blocks go), then loops are recognized: a ``try_wait`` retry loop becomes one blocking wait
(``blocking_wait``), other loops get their induction variables and trip counts
(``induction``). ``structure`` is the entry point the PTX front end calls.
"""
from __future__ import annotations

from dataclasses import replace

from .blocking_wait import _blocking_wait, _peek_then_wait
from .grid_barrier import _grid_barrier
from .cfg import EXIT, _ReachableGraph, build_cfg
from .errors import KernelError
from .induction import _Defs, _induction
from .nodes import Block, Break, Continue, If, Imm, Instr, Kernel, Loop, Reg, RegDecl
from .optable import leaves_function
from .types import Scalar


def structure(kernel: Kernel, flat: list, path: str) -> Kernel:
    blocks, by_label, g = build_cfg(flat, path)
    st = _Structurer(blocks, by_label, g, path)
    body = st.run()
    body = _simplify(body, None)
    body = _recognize(body, _Defs([x for x in flat if not (isinstance(x, tuple) and x[0] == "branchtargets")]))
    if st.switch_preds:
        return replace(kernel, body=tuple(body),
                       regs=kernel.regs + tuple(RegDecl(Scalar("pred"), r) for r in st.switch_preds))
    return replace(kernel, body=tuple(body))


class _Structurer:
    def __init__(self, blocks, by_label, g, path):
        self.blocks, self.by_label, self.path = blocks, by_label, path
        fast = _ReachableGraph.of(g)
        if fast is not None:
            self.g = g = fast
            order = g.postorder()
            self.rpo = {n: i for i, n in enumerate(reversed(order))}
            self.idom = g.idom(order)
        else:
            import networkx as nx

            g = g.to_networkx()
            reach = nx.descendants(g, 0) | {0}
            self.g = g.subgraph(reach | {EXIT}).copy()
            self.g.remove_node(EXIT)
            g = self.g
            order = list(nx.dfs_postorder_nodes(g, 0))
            self.rpo = {n: i for i, n in enumerate(reversed(order))}
            self.idom = nx.immediate_dominators(g, 0)
        self.back = set()
        for u, v in g.edges():
            if self.rpo[v] <= self.rpo[u]:
                if not self._dominates(v, u):
                    b = blocks[u]
                    t = b.term
                    line = t[1].loc.ptx_line if t and t[0] in ("cond", "switch") else b.line
                    raise KernelError(
                        f"irreducible control flow: the branch to {blocks[v].label or 'block'} "
                        f"enters a loop other than through its header", path, line, 1)
                self.back.add((u, v))
        self.headers = {v for _, v in self.back}
        self.loop_nodes = {}
        for h in self.headers:
            body = {h}
            stack = [u for u, v in self.back if v == h]
            while stack:
                n = stack.pop()
                if n not in body:
                    body.add(n)
                    stack.extend(p for p in g.predecessors(n))
            self.loop_nodes[h] = body
        fwd_in = {n: sum(1 for p in g.predecessors(n) if (p, n) not in self.back) for n in g}
        self.merge = {n for n in g if fwd_in[n] >= 2}
        # a block a brx.idx list names twice (or also falls through to) is entered from two
        # arms of its dispatch: a join point, not code to copy into each arm
        for n in g:
            t = blocks[n].term
            if t and t[0] == "switch":
                seen = [by_label[name] for name in t[2]]
                if t[1].guard is not None and n + 1 < len(blocks):
                    seen.append(n + 1)
                self.merge.update(y for y in seen if seen.count(y) > 1 and (n, y) not in self.back)
        self.switch_preds: list = []
        # placement: loop exits move up to the header of the outermost loop they leave
        self.parent = {}
        for n in g:
            if n == 0:
                continue
            p = self.idom[n]
            outer = [h for h in self.headers if p in self.loop_nodes[h] and n not in self.loop_nodes[h]]
            if outer:
                h = min(outer, key=lambda h: self.rpo[h])
                self.parent[n] = h
                self.merge.add(n)
            else:
                self.parent[n] = p
        self.children = {}
        for n, p in self.parent.items():
            self.children.setdefault(p, []).append(n)

    def _dominates(self, a, b):
        while True:
            if a == b:
                return True
            if b == 0:
                return False
            b = self.idom[b]

    def label(self, n):
        return self.blocks[n].label or f"$B{n}"

    def run(self):
        return self.do_tree(0)

    def do_tree(self, x):
        ys = sorted((c for c in self.children.get(x, ()) if c in self.merge),
                    key=lambda c: -self.rpo[c])
        if x in self.headers:
            inside = [y for y in ys if y in self.loop_nodes[x]]
            outside = [y for y in ys if y not in self.loop_nodes[x]]
            first = self.blocks[x].instrs[0].loc if self.blocks[x].instrs else None
            # the branch back to the header: where a compiler puts the loop statement's line (the
            # header's first instruction may be an inlined helper's)
            back = [_term_loc(self.blocks[u]) for u, v in sorted(self.back) if v == x]
            loop = Loop(self.label(x), tuple(self.node_within(x, inside)),
                        loc=first or replace(_noloc(), ptx_line=self.blocks[x].line),
                        back_loc=next((b for b in back if b.line), back[0] if back else _noloc()))
            return self.wrap(outside, [loop])
        return self.node_within(x, ys)

    def wrap(self, ys, inner):
        code = inner
        for y in reversed(ys):  # ys[-1] has the lowest RPO: innermost block
            pass
        for y in sorted(ys, key=lambda c: self.rpo[c]):
            code = [Block(self.label(y), tuple(code))] + self.do_tree(y)
        return code

    def node_within(self, x, ys):
        if ys:
            y, rest = ys[0], ys[1:]
            return [Block(self.label(y), tuple(self.node_within(x, rest)))] + self.do_tree(y)
        b = self.blocks[x]
        code = list(b.instrs)
        succ = sorted(self.g.successors(x))
        t = b.term
        nxt = x + 1 if x + 1 < len(self.blocks) else EXIT
        if t is None:
            if nxt != EXIT:
                code += self.do_branch(x, nxt)
        elif t[0] == "jump":
            code += self.do_branch(x, self.by_label[t[1]])
        elif t[0] == "cond":
            ins = t[1]
            then = self.do_branch(x, self.by_label[t[2]])
            other = self.do_branch(x, nxt) if nxt != EXIT else []
            code.append(If(ins.guard.reg, ins.guard.negated, tuple(then), tuple(other), ins.loc))
        elif t[0] == "switch":
            ins = t[1]
            arms = self.dispatch(x, ins, t[2])
            if ins.guard is None:
                code += arms
            else:
                other = self.do_branch(x, nxt) if nxt != EXIT else []
                code.append(If(ins.guard.reg, ins.guard.negated, tuple(arms), tuple(other), ins.loc))
        elif t[0] == "ret":
            ins = t[1]
            if ins.guard is None:
                code.append(ins)
            else:
                other = self.do_branch(x, nxt) if nxt != EXIT else []
                code.append(If(ins.guard.reg, ins.guard.negated, (replace(ins, guard=None),), tuple(other), ins.loc))
        del succ
        return code

    def dispatch(self, x, ins, labels):
        """``brx.idx index, L`` over the list ``L`` of N labels (PTX ISA §9.7.12.4): the check
        ``brx.idx index, N`` (an index of N or more is undefined behaviour; with ``.uni`` the
        index must be the same in all active lanes of the warp), then a chain of ifs on
        ``index == i``, each lane going to its own target (without ``.uni`` the branch may
        diverge; the arms reconverge where the structured code joins)."""
        index = ins.operands[0]
        code = [replace(ins, guard=None, operands=(index, Imm(len(labels))))]
        chain = self.do_branch(x, self.by_label[labels[-1]])
        k = len(self.switch_preds)
        for i in range(len(labels) - 2, -1, -1):
            p = Reg(f"%brx${x}_{i}")
            self.switch_preds.append(p.name)
            test = Instr("setp", ("eq", "u32"), (p, index, Imm(i)), None, ins.loc)
            then = self.do_branch(x, self.by_label[labels[i]])
            chain = [test, If(p, False, tuple(then), tuple(chain), ins.loc)]
        self.switch_preds[k:] = sorted(self.switch_preds[k:])
        return code + chain

    def do_branch(self, x, y):
        loc = _term_loc(self.blocks[x])
        if (x, y) in self.back:
            return [Continue(self.label(y), loc)]
        if y in self.merge:
            return [Break(self.label(y), loc)]
        return self.do_tree(y)


def _noloc():
    from .nodes import Loc

    return Loc()


def _term_loc(b):
    t = b.term
    if t and t[0] in ("cond", "ret", "switch"):
        return t[1].loc
    if b.instrs:
        return b.instrs[-1].loc
    return _noloc()


# --------------------------------------------------------------------------- simplification
def _jumps(stmts) -> bool:
    """Does control never fall off the end of ``stmts``?"""
    if not stmts:
        return False
    s = stmts[-1]
    if isinstance(s, (Break, Continue)):
        return True
    if isinstance(s, Instr):
        return leaves_function(s) and s.guard is None
    if isinstance(s, If):
        return _jumps(s.then) and _jumps(s.orelse)
    return False


def _breaks_to(stmts, label) -> bool:
    for s in stmts:
        if isinstance(s, Break) and s.label == label:
            return True
        if isinstance(s, If) and (_breaks_to(s.then, label) or _breaks_to(s.orelse, label)):
            return True
        if isinstance(s, (Block, Loop)) and _breaks_to(s.body, label):
            return True
    return False


def _simplify(stmts, fall):
    """``fall``: the Block label that falling off the end of ``stmts`` reaches (None when
    it reaches something else). Removes redundant trailing breaks, unused blocks, and
    hoists the else-branch of an if whose then-branch always jumps."""
    out = []
    n = len(stmts)
    for i, s in enumerate(stmts):
        last = i == n - 1
        f = fall if last else None
        if isinstance(s, Block):
            body = _simplify(list(s.body), s.label)
            if _breaks_to(body, s.label):
                out.append(replace(s, body=tuple(body)))
            else:
                out.extend(body)
        elif isinstance(s, Loop):
            out.append(replace(s, body=tuple(_simplify(list(s.body), f))))
        elif isinstance(s, If):
            then = _simplify(list(s.then), f)
            orelse = _simplify(list(s.orelse), f)
            neg = s.negated
            if not then and orelse:
                then, orelse, neg = orelse, [], not neg
            if then and orelse and _jumps(then):
                out.append(replace(s, then=tuple(then), orelse=(), negated=neg))
                rest = _simplify(orelse, f)
                out.extend(rest)
            elif then or orelse:
                out.append(replace(s, then=tuple(then), orelse=tuple(orelse), negated=neg))
        elif isinstance(s, Break) and last and s.label == fall:
            continue
        else:
            out.append(s)
    # the hoisting above can expose a trailing redundant break
    if out and isinstance(out[-1], Break) and out[-1].label == fall:
        out.pop()
    return out



# --------------------------------------------------------------------------- recognition
def _recognize(stmts, defs: _Defs):
    out = []
    for s in stmts:
        if isinstance(s, Loop):
            body = _recognize(list(s.body), defs)
            w = _blocking_wait(s.label, body)
            if w is not None:
                out.extend(w)
                continue
            s = replace(s, body=tuple(body))
            out.append(_induction(s, defs))
        elif isinstance(s, Block):
            body = tuple(_recognize(list(s.body), defs))
            out.append(s if _same_items(body, s.body)
                       else Block(s.label, body, s.loc))
        elif isinstance(s, If):
            then = tuple(_recognize(list(s.then), defs))
            orelse = tuple(_recognize(list(s.orelse), defs))
            out.append(s if _same_items(then, s.then) and _same_items(orelse, s.orelse)
                       else If(s.cond, s.negated, then, orelse, s.loc))
        else:
            out.append(s)
    return _grid_barrier(_peek_then_wait(out))


def _same_items(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))

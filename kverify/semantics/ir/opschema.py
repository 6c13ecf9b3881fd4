"""The op table's schema: what a row is made of. ``Slot`` (an operand position: access,
optionality, width), ``ModSlot`` and ``Form`` (the named modifier positions of one syntax
form, and whether a list of modifiers fits it), ``OpRow`` (one instruction family), and the
vocabularies of the ``effect``, ``flow`` and ``collective`` columns. The rows themselves
are in ``optable``.
"""
from __future__ import annotations

from dataclasses import dataclass

#: The ``effect`` column. ``value``: computes registers only; ``memory``: a generic-proxy
#: access through an address (ld/st/atom/red, ldmatrix/stmatrix); ``async``: issues an
#: operation that completes later or acts in the async proxy (cp.async, bulk/tensor copies,
#: wgmma.mma_async, st.async, red.async); ``sync``: a barrier, fence, group, mbarrier or
#: warp-collective operation; ``control``: changes the flow of control; ``nop``: no effect
#: the semantics models (hints, sleeps); ``opaque``: an instruction with no row.
EFFECTS = ("value", "memory", "async", "sync", "control", "nop", "opaque")
#: The ``flow`` column of control rows: ``branch`` (bra), ``branch.indirect`` (brx.idx),
#: ``call``, ``return`` (ret: back to the caller), ``exit`` (the thread ends), ``trap``.
FLOWS = ("branch", "branch.indirect", "call", "return", "exit", "trap")
#: The ``collective`` column: what a warp-collective row exchanges among the lanes.
COLLECTIVES = ("shuffle", "vote", "match", "reduce", "elect", "activemask", "matrix", "mma")


@dataclass(frozen=True, slots=True)
class Slot:
    name: str
    access: str  # def | use | load | store | update | addr | target
    optional: bool = False
    variadic: bool = False
    bits: str | None = None  # width: an integer, or t / t2 / w (see operand_bits)


@dataclass(frozen=True, slots=True)
class ModSlot:
    """One named modifier position of a form: its values, whether one is required, and how
    many of them may appear together (``None``: any number)."""
    name: str
    values: frozenset
    required: bool = False
    most: int | None = 1


@dataclass(frozen=True, slots=True)
class Form:
    """One syntax form of an instruction family: the modifier slots that go together."""
    name: str
    slots: tuple  # of ModSlot
    permissive: bool = False

    @property
    def vocabulary(self) -> frozenset:
        return frozenset(v for s in self.slots for v in s.values)

    def misfit(self, mods: tuple) -> str | None:
        """Why ``mods`` do not fit this form (``None`` when they do)."""
        filled: dict = {}
        for m in mods:
            slots = [s for s in self.slots if m in s.values]
            if not slots:
                return f".{m} is not part of the {self.name} form"
            free = [s for s in slots if s.most is None or len(filled.get(s.name, ())) < s.most]
            if not free:
                have = filled[slots[0].name]
                return f"more than one {slots[0].name} ({', '.join('.' + x for x in have + [m])})"
            filled.setdefault(free[0].name, []).append(m)
        for s in self.slots:
            if s.required and s.name not in filled:
                some = ", ".join("." + v for v in sorted(s.values)[:3])
                article = "an" if s.name[0] in "aeiou" else "a"
                return f"{article} {s.name} modifier ({some}, ...) is required"
        return None


def mods(name: str, *values, required: bool = False, most: int | None = 1) -> ModSlot:
    """A modifier slot; ``values`` are strings or tuples of them."""
    vs = frozenset(v for g in values for v in (g if isinstance(g, tuple) else (g,)))
    return ModSlot(name, vs, required, most)


def form(name: str, *slots: ModSlot) -> Form:
    return Form(name, tuple(slots))


def loose(*mod_groups) -> Form:
    """The permissive form: any of these modifiers, in any number and combination."""
    return Form("any", (mods("modifier", *mod_groups, most=None),), permissive=True)


@dataclass(frozen=True, slots=True)
class OpRow:
    mnemonic: str
    operands: tuple  # of Slot
    forms: tuple  # of Form
    section: str
    space: str | None = None  # fixed space, "mods" (from a modifier), or None
    proxy: str | None = None  # generic | async | None (no memory access)
    sync: str | None = None  # synchronization effect, read by the protocol semantics
    semantics: str | None = None  # value-semantics family in semantics.values
    checks: tuple = ()  # named check functions (instr) -> str | None
    effect: str = "nop"  # one of EFFECTS: what the instruction does, for every analysis
    flow: str | None = None  # control rows: one of FLOWS
    collective: str | None = None  # warp-collective rows: which exchange (COLLECTIVES)

    @property
    def mods(self) -> frozenset:
        """Every modifier some form of the row accepts."""
        return frozenset().union(*(f.vocabulary for f in self.forms))

    @property
    def permissive(self) -> bool:
        return any(f.permissive for f in self.forms)

    @property
    def min_operands(self) -> int:
        return sum(1 for s in self.operands if not s.optional and not s.variadic)

    @property
    def max_operands(self) -> int | None:
        return None if any(s.variadic for s in self.operands) else len(self.operands)


def operand_slots(spec: str) -> tuple:
    out = []
    for tok in spec.split():
        tok, _, bits = tok.partition("=")
        access, name = tok.split(":")
        opt, var = name.endswith("?"), name.endswith("*")
        out.append(Slot(name.rstrip("?*"), access, opt, var, bits or None))
    return tuple(out)

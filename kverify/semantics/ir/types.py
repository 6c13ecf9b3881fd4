"""PTX types (PTX ISA §5.2 "Types") and state spaces (§5.1 "State Spaces")."""
from __future__ import annotations

from dataclasses import dataclass

#: Fundamental scalar types and their width in bits (§5.2.1).
SCALAR_BITS: dict[str, int] = {
    "pred": 1,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "tf32": 32,
    "e4m3": 8, "e5m2": 8, "e4m3x2": 16, "e5m2x2": 16,
    "f32": 32, "f64": 64,
}

#: State spaces (§5.1). ``shared`` alone means ``shared::cta``.
STATE_SPACES = (
    "reg", "sreg", "const", "global", "local", "param", "shared",
    "shared::cta", "shared::cluster", "tex", "generic",
)


@dataclass(frozen=True, slots=True)
class Scalar:
    """A fundamental type such as ``.u32`` or ``.pred``."""

    name: str

    def __post_init__(self):
        if self.name not in SCALAR_BITS:
            raise ValueError(f"unknown PTX type .{self.name}")

    @property
    def bits(self) -> int:
        return SCALAR_BITS[self.name]

    @property
    def is_float(self) -> bool:
        return self.name[0] in "fet" or self.name.startswith("bf")

    @property
    def is_signed(self) -> bool:
        return self.name[0] == "s"

    def __str__(self) -> str:
        return "." + self.name


@dataclass(frozen=True, slots=True)
class Vector:
    """``.v2``/``.v4``/``.v8`` of a scalar (§5.4.3)."""

    elem: Scalar
    count: int

    @property
    def bits(self) -> int:
        return self.elem.bits * self.count

    def __str__(self) -> str:
        return f".v{self.count} {self.elem}"


@dataclass(frozen=True, slots=True)
class Pointer:
    """A pointer into a state space: a kernel parameter declared ``.ptr.global``, or an
    address register whose space the front end inferred."""

    space: str
    align: int | None = None

    def __str__(self) -> str:
        return f".ptr .{self.space}" + (f" .align {self.align}" if self.align else "")


PRED = Scalar("pred")


def is_type_name(name: str) -> bool:
    return name in SCALAR_BITS

"""Cost formulas that evaluate in Python and render as the same expression in C.

The step schedule (``schedule.py``) writes each cost once, as an expression over named
constants and parameters; the mirror calls it with values, and ``scripts/gen_schedule.py``
renders it as a function-like macro of ``programs/curta/schedule.h``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


class Expr:
    """An integer expression over named constants and parameters (+, -, *, floor /)."""

    def precedence(self) -> int:
        """How tightly the expression binds in C: an operand, a product or a sum."""
        return 3

    def __add__(self, other: Expr | int) -> Expr:
        return _Op("+", self, _wrap(other))

    def __sub__(self, other: Expr | int) -> Expr:
        return _Op("-", self, _wrap(other))

    def __mul__(self, other: Expr | int) -> Expr:
        return _Op("*", self, _wrap(other))

    def __floordiv__(self, other: Expr | int) -> Expr:
        return _Op("/", self, _wrap(other))

    def value(self, env: Mapping[str, int]) -> int:
        """The expression's value, its parameters taken from ``env``."""
        raise NotImplementedError

    def c(self) -> str:
        """The expression in C (unsigned operands: ``/`` is the floor division)."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Num(Expr):
    """An integer literal."""

    number: int

    def value(self, env: Mapping[str, int]) -> int:
        """Its number."""
        return self.number

    def c(self) -> str:
        """Its digits."""
        return str(self.number)


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A named constant: C writes its name (a ``#define`` of the generated header).

    Attributes:
        name: its C name.
        number: its value.
        note: what it pays for (the header's comment).
        definition: how the header defines it, when not as its value.
    """

    name: str
    number: int
    note: str = ""
    definition: Expr | None = None

    def value(self, env: Mapping[str, int]) -> int:
        """Its number."""
        return self.number

    def c(self) -> str:
        """Its name."""
        return self.name


@dataclass(frozen=True, eq=False)
class Param(Expr):
    """A formula's parameter: a macro argument in C, a keyword in Python."""

    name: str

    def value(self, env: Mapping[str, int]) -> int:
        """Its value in ``env``."""
        return env[self.name]

    def c(self) -> str:
        """The macro argument, bracketed."""
        return f"({self.name})"


@dataclass(frozen=True, eq=False)
class _Op(Expr):
    op: str
    left: Expr
    right: Expr

    def precedence(self) -> int:
        return _PRECEDENCE[self.op]

    def value(self, env: Mapping[str, int]) -> int:
        a, b = self.left.value(env), self.right.value(env)
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        return a // b

    def c(self) -> str:
        left = self.left.c()
        if self.left.precedence() < self.precedence():
            left = f"({left})"
        right = self.right.c()
        # The right operand is bracketed at equal precedence too: a - (b + c), a * (b / c).
        if self.right.precedence() <= self.precedence():
            right = f"({right})"
        return f"{left} {self.op} {right}"


def _wrap(value: Expr | int) -> Expr:
    return value if isinstance(value, Expr) else Num(value)


@dataclass(frozen=True)
class Formula:
    """A cost formula: a C function-like macro and a Python function of the same names."""

    name: str
    params: tuple[str, ...]
    expr: Expr
    doc: str

    def __call__(self, **values: int) -> int:
        """The cost for these parameter values (every parameter, by name)."""
        if set(values) != set(self.params):
            raise TypeError(f"{self.name} takes {', '.join(self.params)}")
        return self.expr.value(values)

    def c(self) -> str:
        """The ``#define`` line."""
        return f"#define {self.name}({', '.join(self.params)}) ({self.expr.c()})"

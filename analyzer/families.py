"""Value families: how the state keeps a value, whatever its SQL type.

An aggregate's state fields depend on the family of its argument (``analyzer.aggregates``), and the
family on the argument's type (``analyzer.value_types``): a module of its own, below both.
"""

from __future__ import annotations

from enum import Enum

#: The most digits a DECIMAL holds, on Flink and on Spark.
MAX_DIGITS = 38


#: The most digits a DECIMAL may have for a STDDEV or VARIANCE to keep its values and their squares
#: exactly (:attr:`Family.EXACT`): a square of 32 digits at twice the scale leaves a window's sum of
#: them 6 digits of 38, room for 10^6 values at the type's bound (a DECIMAL(19, 19)'s squares take
#: all 38, and the sum of two passes them). A wider DECIMAL (:attr:`Family.WIDE`) keeps its values
#: below 10^(16 - s) so, and the rest in DOUBLE.
EXACT_SQUARE_DIGITS = 16


def squares_scale(scale: int) -> int:
    """The scale the state keeps the squares of exact values of ``scale`` at: twice it, as a square
    has, within a DECIMAL's digits (past a scale of 19, :attr:`Family.WIDE` keeps every square in
    DOUBLE: its exact sum stays 0)."""
    return min(2 * scale, MAX_DIGITS)


class Family(str, Enum):
    """A value family, as the state keeps values: exact numbers (integers and decimals, kept as
    decimals: see :func:`analyzer.value_types.exact_type`), floating point, time and text. The
    values are the letters a recorded slot shape spells them with (``SUM:m2``)."""

    EXACT = "m"
    INTEGER = "i"  # never a type's family: the one a SUM, MIN or MAX keeps integers in (a long, as Spark)
    FLOATING = "d"
    #: never a type's family either: the one a STDDEV or VARIANCE keeps a DECIMAL of more than
    #: :data:`EXACT_SQUARE_DIGITS` digits in (``AggregateFunction.exact_digits``), whose squares'
    #: sum may pass 38 digits at twice its scale: a value and its square exact below 10^(16 - s),
    #: both in DOUBLE past it
    WIDE = "v"
    #: the one slots recorded before :attr:`WIDE` keep such a DECIMAL in: every value's sum exact (in
    #: the DECIMAL's scale, which a sum overflows where a value may reach a 38-digit decimal's
    #: bound), its squares as :attr:`WIDE` keeps them. Re-seeded into :attr:`WIDE` at a restart that can.
    WIDE_EXACT_SUM = "w"
    TIME = "t"
    TEXT = "s"

    @property
    def described(self) -> str:
        """The family as a message names it."""
        return _DESCRIBED[self]


_DESCRIBED = {Family.EXACT: "an exact number", Family.INTEGER: "an integer",
              Family.FLOATING: "a floating-point number", Family.WIDE: "an exact number of more than 16 digits",
              Family.WIDE_EXACT_SUM: "an exact number of more than 16 digits, summed exactly",
              Family.TIME: "a time", Family.TEXT: "text"}

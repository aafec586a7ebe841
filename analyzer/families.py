"""Value families: how the state keeps a value, whatever its SQL type.

An aggregate's state fields depend on the family of its argument (``analyzer.aggregates``), and the
family on the argument's type (``analyzer.value_types``): a module of its own, below both.
"""

from __future__ import annotations

from enum import Enum

#: The most digits a DECIMAL holds, on Flink and on Spark.
MAX_DIGITS = 38


class Family(str, Enum):
    """A value family, as the state keeps values: exact numbers (integers and decimals, kept as
    decimals: see :func:`analyzer.value_types.exact_type`), floating point, time and text. The
    values are the letters a recorded slot shape spells them with (``SUM:m2``)."""

    EXACT = "m"
    INTEGER = "i"  # never a type's family: the one a SUM, MIN or MAX keeps integers in (a long, as Spark)
    FLOATING = "d"
    #: never a type's family either: the one a STDDEV or VARIANCE keeps a DECIMAL in whose squares
    #: no decimal holds at twice its scale (``AggregateFunction.exact_digits``): exact where a value's
    #: square fits, in DOUBLE past it
    WIDE = "w"
    TIME = "t"
    TEXT = "s"

    @property
    def described(self) -> str:
        """The family as a message names it."""
        return _DESCRIBED[self]


_DESCRIBED = {Family.EXACT: "an exact number", Family.INTEGER: "an integer",
              Family.FLOATING: "a floating-point number", Family.WIDE: "an exact number of more than 19 digits",
              Family.TIME: "a time", Family.TEXT: "text"}

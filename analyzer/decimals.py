"""The DECIMAL types Flink derives for arithmetic, literals and ROUND, which Spark derives alike.

A state field keeps an exact value in its own type only where that type is certain, and it is
wherever Flink's ``LogicalTypeMerging`` and Spark's ``DecimalPrecision`` agree: on ``+``, ``-``,
``*`` and ``/`` of DECIMALs, integers and number literals (an integer literal in arithmetic is an INT
on both, as the job casts it: ``spark_jobs.expressions``), on ROUND and TRUNCATE (which Spark
computes as ``spark_jobs.expressions`` writes it), and on a value that is one of its operands (a
CASE, COALESCE or GREATEST: :func:`common`). The dialect types ROUND and TRUNCATE by
:func:`rounded`; :func:`analyzer.value_types.exact_type` reads the rest.
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from stategate.analyzer.families import MAX_DIGITS

#: The operators whose DECIMAL result type Flink and Spark derive alike from their operands'.
DECIMAL_OPERATORS = (exp.Add, exp.Sub, exp.Mul, exp.Div)
#: The decimal digits Spark gives each integer type (``DecimalType.forType``), and Flink too.
INTEGER_DIGITS = {exp.DataType.Type.TINYINT: 3, exp.DataType.Type.SMALLINT: 5, exp.DataType.Type.INT: 10,
                  exp.DataType.Type.BIGINT: 20}
#: The fewest digits of scale a result past 38 digits keeps, and a quotient's least scale.
_KEPT_SCALE = 6


def literal_digits(literal: exp.Literal) -> tuple[int, int] | None:
    """A number literal's (precision, scale): an integer's as an INT's (a BIGINT's past its range),
    ``2.5`` a DECIMAL(2, 1), ``0.001`` a DECIMAL(3, 3); None for one with an exponent (a DOUBLE)."""
    text = literal.name.lstrip("-+")
    if "e" in text.lower():
        return None
    if literal.is_int:
        return INTEGER_DIGITS[exp.DataType.Type.INT if abs(int(text)) < 2**31 else exp.DataType.Type.BIGINT], 0
    whole, _, fraction = text.partition(".")
    digits = len((whole + fraction).lstrip("0"))
    return max(digits, len(fraction), 1), len(fraction)


def arithmetic(operator: type[exp.Expr], left: tuple[int, int], right: tuple[int, int]) -> tuple[int, int]:
    """The (precision, scale) of ``operator`` (one of :data:`DECIMAL_OPERATORS`) over DECIMALs of
    ``left`` and ``right``: a sum or difference keeps the larger scale and one more digit, a product
    the sum of both, a quotient at least 6 digits of scale; a result past 38 digits keeps its
    integer digits and cuts its scale, to no fewer than 6."""
    (p1, s1), (p2, s2) = left, right
    if operator is exp.Mul:
        precision, scale = p1 + p2 + 1, s1 + s2
    elif operator is exp.Div:
        scale = max(_KEPT_SCALE, s1 + p2 + 1)
        precision = p1 - s1 + s2 + scale
    else:
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale + 1
    if precision <= MAX_DIGITS:
        return precision, scale
    return MAX_DIGITS, max(MAX_DIGITS - (precision - scale), min(scale, _KEPT_SCALE))


def common(types: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The (precision, scale) of a value that is one of DECIMALs of ``types`` (a CASE's, a
    COALESCE's, a GREATEST's): every whole digit and every place any of them has. None past 38
    digits, where the engines part: Flink keeps the whole digits and cuts the scale
    (``LogicalTypeMerging``), Spark keeps the scale and cuts the whole digits (``widerDecimalType``)."""
    scale = max(s for _, s in types)
    whole = max(p - s for p, s in types)
    return (whole + scale, scale) if whole + scale <= MAX_DIGITS else None


def whole_digits(precision: int, scale: int) -> int:
    """The digits of FLOOR or CEIL of a DECIMAL(``precision``, ``scale``), at scale 0: Spark's, one
    more than its whole digits where it has a scale (a carry). Flink's keeps ``precision`` digits:
    the same values, the same scale."""
    return precision - scale + 1 if scale else precision


def rounded(precision: int, scale: int, places: int) -> tuple[int, int]:
    """The (precision, scale) of a DECIMAL(``precision``, ``scale``) rounded or truncated to
    ``places`` (``findRoundDecimalType``): below its scale, ``places`` of scale and a digit more (rounding may
    carry one); at or past its scale, unchanged (Spark adds a digit there, which no value fills);
    below 0, none, with that digit."""
    if places >= scale:
        return precision, scale
    if places < 0:
        return min(MAX_DIGITS, 1 + precision - scale), 0
    return 1 + precision - scale + places, places


def round_places(node: exp.Round | exp.Trunc) -> int | None:
    """The places a ROUND rounds to, or a TRUNCATE truncates to (0 where none is written); None
    where they are not an integer literal (``-1`` a negation of one)."""
    places = node.args.get("decimals")
    if places is None:
        return 0
    negated = isinstance(places, exp.Neg)
    literal = places.this if negated else places
    if not (isinstance(literal, exp.Literal) and literal.is_int):
        return None
    return -int(literal.name) if negated else int(literal.name)

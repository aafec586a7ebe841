"""The SQL type of a resolved expression, from the declared column types (no engine needed).

The state layout gives each aggregate a slot made for its value family, and places MIN/MAX over
text in slots of their own (:mod:`analyzer.layout`), so the analyzer, the gate and the job must
agree on what each aggregate reads before any engine runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.annotate_types import annotate_types

from stategate.analyzer.aggregates import AGGREGATES
from stategate.analyzer.decimals import (DECIMAL_OPERATORS, INTEGER_DIGITS, arithmetic, common, literal_digits,
                                         round_places, rounded, whole_digits)
from stategate.analyzer.dialect import ONE_OF_OPERANDS, Flink, function_name, value_operands
from stategate.analyzer.families import MAX_DIGITS, Family
from stategate.analyzer.model import WINDOW_MARKER, JobModel, sql_key

_STRING = exp.DataType.build("STRING", dialect=Flink)
#: The types of Flink's built-in functions that sqlglot cannot type on its own (or types otherwise:
#: Flink's WEEK is a BIGINT), by name.
FUNCTION_TYPES: Mapping[str, exp.DataType] = {
    **{name: _STRING for name in (
        "BTRIM", "CHR", "PAD", "DATE_FORMAT", "DECODE", "ELT", "FROM_BASE64", "FROM_UNIXTIME", "HEX", "JSON_QUERY",
        "JSON_VALUE", "LPAD", "MD5", "OVERLAY", "PARSE_URL", "PRINTF", "REGEXP_EXTRACT", "REGEXP_REPLACE",
        "REPEAT", "REPLACE", "REVERSE", "RPAD", "SHA1", "SHA2", "SHA224", "SHA256", "SHA384", "SHA512",
        "SPLIT_INDEX", "TO_BASE64", "TRANSLATE", "URL_DECODE", "URL_ENCODE", "UUID")},
    **{name: exp.DataType.build("BOOLEAN") for name in ("IS_ALPHA", "IS_DECIMAL", "IS_DIGIT")},
    "WEEK": exp.DataType.build("BIGINT"),
    **{name: exp.DataType.build("DOUBLE") for name in ("LOG10", "LOG2")},
    "TO_TIMESTAMP_LTZ": exp.DataType.build("TIMESTAMP(3)", dialect=Flink),  # a TIMESTAMP_LTZ(3): the job runs in UTC
}
#: Flink's type of a window's attributes (``window_start``, ``window_end``, ``window_time``, a
#: legacy window's ``TUMBLE_START``...), as its text shows them: a time of milliseconds.
_WINDOW_ATTRIBUTE = exp.DataType.build("TIMESTAMP(3)", dialect=Flink)
_UNKNOWN = exp.DataType.build("UNKNOWN")


def value_type(model: JobModel, expr: exp.Expr, known: Mapping[str, exp.DataType] | None = None) -> exp.DataType:
    """``expr``'s type; UNKNOWN where a column's type is not declared or a function is opaque.

    Resolved expressions name source columns (``Table.column``), or values a stage computed, whose
    types ``known`` holds by expression key (:class:`Typing`). A column is typed by its declaration
    alone: most aggregates read one, and inference costs a copy and a pass of sqlglot's annotator
    (on a script of 49,000 INSERTs, 98,000 of them). In anything larger each column or known value
    is replaced by a typed null (``CAST(NULL AS <its type>)``), as is a call of one of
    :data:`FUNCTION_TYPES`, and sqlglot's type inference does the rest."""
    declared = model.declared_types
    if known:
        found = known.get(sql_key(expr))
        if found is not None:
            return found.copy()
    if isinstance(expr, exp.Column):
        found = _built(declared.get((expr.table, expr.name)))
        return (found if found is not None else _UNKNOWN).copy()

    def typed(node: exp.Expr) -> exp.Expr:
        typed_as = FUNCTION_TYPES.get(function_name(node)) if isinstance(node, exp.Func) else None
        if typed_as is not None:
            return exp.Cast(this=exp.null(), to=typed_as.copy())
        result = _aggregate_result(model, node, known)
        if result is not None:
            return exp.Cast(this=exp.null(), to=result)
        found = known.get(sql_key(node)) if known else None
        if found is None and isinstance(node, exp.Column):
            found = _built(declared.get((node.table, node.name)))
        return node if found is None else exp.Cast(this=exp.null(), to=found.copy())

    return annotate_types(expr.copy().transform(typed), dialect=Flink).type or _UNKNOWN.copy()


def _aggregate_result(model: JobModel, node: exp.Expr, known: Mapping[str, exp.DataType] | None) -> exp.DataType | None:
    """Flink's type of an aggregate call's result, from the table of aggregates
    (:meth:`~analyzer.aggregates.AggregateFunction.result_type`), where sqlglot types it otherwise:
    an AVG, STDDEV or VARIANCE of INTs is an INT on Flink, a DOUBLE for sqlglot, so over a
    window's results (a cascade's input, its SELECT list) ``AVG(qty) / 2`` divides integers. None
    for any other node, and where the table gives no type."""
    if not isinstance(node, (exp.AggFunc, exp.Anonymous)):
        return None
    function = AGGREGATES.get(function_name(node))
    if function is None:
        return None
    # sqlglot's own aggregates hold their argument as ``this``; one it does not know (COLLECT), as
    # its first expression.
    argument = node.this if isinstance(node, exp.AggFunc) else next(iter(node.expressions), None)
    if isinstance(argument, exp.Distinct):
        argument = next(iter(argument.expressions), None)
    if argument is None or isinstance(argument, exp.Star):
        return function.result_type(None)
    kind = value_type(model, argument, known)
    if kind.this == exp.DataType.Type.DECIMAL and len(kind.expressions) != 2:
        # sqlglot types arithmetic of DECIMALs without digits (``price / 4``), where Flink's are
        # certain (a DECIMAL(21, 13)): an AVG's or a STDDEV's scale is the argument's.
        exact = exact_type(model, argument)
        if exact is not None:
            kind = exp.DataType.build(f"DECIMAL({exact[0]}, {exact[1]})")
    return function.result_type(kind)


@lru_cache(maxsize=1024)
def _built(text: str | None) -> exp.DataType | None:
    """A declared type's text as sqlglot's type (callers copy it); None for a type sqlglot cannot
    read, which stays unknown."""
    if text is None:
        return None
    try:
        return exp.DataType.build(text, dialect=Flink)
    except ParseError:
        return None


_FAMILIES = (
    (Family.EXACT, exp.DataType.INTEGER_TYPES | {exp.DataType.Type.BOOLEAN}
     | (exp.DataType.REAL_TYPES - exp.DataType.FLOAT_TYPES)),
    (Family.FLOATING, exp.DataType.FLOAT_TYPES),
    (Family.TIME, exp.DataType.TEMPORAL_TYPES - {exp.DataType.Type.TIME, exp.DataType.Type.TIMETZ}),
    (Family.TEXT, exp.DataType.TEXT_TYPES),
)


def family(model: JobModel, expr: exp.Expr) -> Family | None:
    """``expr``'s value family; None where its type cannot be told."""
    return family_of(value_type(model, expr))


def family_of(kind: exp.DataType) -> Family | None:
    """A type's value family; None for UNKNOWN and the types no family holds."""
    return next((name for name, types in _FAMILIES if kind.this in types), None)


def exact_scale(model: JobModel, expr: exp.Expr) -> int | None:
    """The scale an exact ``expr`` has on any engine, where that is certain (:func:`exact_type`):
    0 for integers, the declared scale of a DECIMAL column or CAST, and arithmetic's over those.
    None otherwise (a function's result: engines choose its scale by rules of their own)."""
    found = exact_type(model, expr)
    return None if found is None else found[1]


def exact_type(model: JobModel, expr: exp.Expr) -> tuple[int, int] | None:
    """The (precision, scale) of an exact ``expr`` on any engine, where that is certain: the
    declared DECIMAL(p, s) of a column or CAST, an integer type as the decimal Spark widens it to
    (an INT to DECIMAL(10, 0), a BIGINT to DECIMAL(20, 0)), a number literal's own digits;
    ``+``, ``-``, ``*``, ``/``, ROUND and TRUNCATE of those, a CASE, IF, COALESCE, GREATEST or
    LEAST of them (their common type, NULLs aside), ABS or NULLIF of one (its own), FLOOR or
    CEIL of one (at scale 0) (:mod:`analyzer.decimals`), and an aggregate's result of those (in 38
    digits, as the engine writes it). None otherwise."""
    node = expr.unnest()
    if isinstance(node, exp.Literal) and node.is_number:
        return literal_digits(node)
    call = node.this if isinstance(node, exp.Filter) else node
    result = _aggregate_result(model, call, None)
    kind = value_type(model, expr) if result is None else result
    if result is not None and kind.this == exp.DataType.Type.DECIMAL and len(kind.expressions) == 2:
        # An aggregate's result, read by a cascade: the engine writes an exact one in 38 digits at
        # Flink's scale (FIRST_VALUE's and LAST_VALUE's in their argument's type, in fewer).
        return MAX_DIGITS, int(kind.expressions[1].name)
    if kind.this in exp.DataType.INTEGER_TYPES:
        return INTEGER_DIGITS.get(kind.this, MAX_DIGITS), 0
    if isinstance(node, exp.Neg):
        return exact_type(model, node.this)
    if isinstance(node, DECIMAL_OPERATORS):
        left, right = exact_type(model, node.this), exact_type(model, node.expression)
        return None if left is None or right is None else arithmetic(type(node), left, right)
    if isinstance(node, (exp.Round, exp.Trunc)):
        rounded_from, places = exact_type(model, node.this), round_places(node)
        return None if rounded_from is None or places is None else rounded(*rounded_from, places)
    if isinstance(node, ONE_OF_OPERANDS):
        found = [exact_type(model, operand) for operand in value_operands(node)
                 if not isinstance(operand.unnest(), exp.Null)]
        operands = [known for known in found if known is not None]
        return common(operands) if operands and len(operands) == len(found) else None
    if isinstance(node, (exp.Abs, exp.Nullif, exp.Sign)):  # of their (first) operand's type, as the job computes them
        return exact_type(model, node.this)
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is None and not node.args.get("decimals"):
        whole_of = exact_type(model, node.this)
        return None if whole_of is None else (whole_digits(*whole_of), 0)
    if kind.this == exp.DataType.Type.DECIMAL and len(kind.expressions) == 2 and isinstance(node, (exp.Column, exp.Cast)):
        return int(kind.expressions[0].name), int(kind.expressions[1].name)
    return None


#: The bits of each integer type Flink and Spark share (Java's byte, short, int and long).
INTEGER_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                 exp.DataType.Type.BIGINT: 64}


@dataclass(frozen=True)
class Typing:
    """What types the expressions at one point of a query: the model's declared columns, a
    window's attributes and, past a window aggregation, the values it computed (by expression key:
    each group key, and each aggregate's result as Flink types it, ``SUM`` of an INT an INT)."""

    model: JobModel
    known: Mapping[str, exp.DataType] = field(default_factory=dict)

    def of(self, expr: exp.Expr) -> exp.DataType:
        if isinstance(expr, exp.Column) and expr.table.startswith(WINDOW_MARKER):
            return _WINDOW_ATTRIBUTE.copy()
        return value_type(self.model, expr, self.known)

    def integer_bits(self, expr: exp.Expr) -> int | None:
        """The bits of ``expr``'s integer type (8 for a TINYINT to 64 for a BIGINT); None where it
        is of no integer type, or its type cannot be told."""
        return INTEGER_BITS.get(self.of(expr).this)

    def family(self, expr: exp.Expr) -> Family | None:
        return family_of(self.of(expr))

    def knowing(self, known: Mapping[str, exp.DataType]) -> Typing:
        """This typing, and the types of the values ``known`` holds."""
        return Typing(self.model, {**self.known, **known})


#: The time types Flink writes as text with their fraction of a second (:func:`text_digits`).
TIMES = (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPLTZ, exp.DataType.Type.TIMESTAMPTZ)
#: A time's digits of a second, where its type names none (Flink's TIMESTAMP is a TIMESTAMP(6)).
_TIME_DIGITS = 6


def text_digits(kind: exp.DataType) -> int | None:
    """The digits of a second with which Flink writes a time of type ``kind`` as text, always all
    of them (a TIMESTAMP(3)'s ``08:01:00.000``); None for a type of no time, or of more digits than
    Spark keeps (microseconds)."""
    if kind.this not in TIMES:
        return None
    digits = int(kind.expressions[0].name) if kind.expressions else _TIME_DIGITS
    return digits if digits <= _TIME_DIGITS else None


def text_length(kind: exp.DataType) -> int | None:
    """The length Flink cuts a value cast to the text type ``kind`` to (and pads one of a CHAR to,
    with spaces): a CHAR(n)'s or VARCHAR(n)'s ``n``, a CHAR's of no length 1. None for a STRING, a
    VARCHAR of no length (a STRING in a CAST) or of a STRING's length, and any type but text."""
    if not kind.is_type(*exp.DataType.TEXT_TYPES):
        return None
    if not kind.expressions:
        return _CHAR_LENGTH if kind.this == exp.DataType.Type.CHAR else None
    length = int(kind.expressions[0].name)
    return None if length >= _STRING_LENGTH and kind.this != exp.DataType.Type.CHAR else length


#: The length of Flink's CHAR of none, and of its STRING (a VARCHAR(2147483647)).
_CHAR_LENGTH, _STRING_LENGTH = 1, 2**31 - 1


def is_integer(model: JobModel, expr: exp.Expr) -> bool:
    """Whether ``expr`` is of an integer type (TINYINT to BIGINT)."""
    return value_type(model, expr).this in exp.DataType.INTEGER_TYPES


def is_text(model: JobModel, expr: exp.Expr) -> bool:
    return family(model, expr) is Family.TEXT



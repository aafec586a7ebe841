"""Resolved model expressions → Spark SQL column expressions.

The model's expressions are already resolved to source columns (``Bid.price``) or to the columns a
stage produces (keys, aggregates, window attributes). Translating is a rewrite of those references to
the DataFrame's column names, then sqlglot's own Spark generator: the SQL is not parsed again.

Arithmetic over a source's columns and over a window's results is Flink's: integers divide as
integers (``7 / 2`` is 3, where Spark's is 3.5), and arithmetic goes past its type's range as
Flink's does, where Spark's fails the query: integers wrap as Java's do (an INT's ``2147483647 + 1``
is ``-2147483648``, a ``CAST`` of an INT or a DECIMAL to a TINYINT keeps its low 8 bits), a
floating-point number ``CAST`` to an INT or a BIGINT is held to its range (to a TINYINT or
SMALLINT, an int's low bits), and a number ``CAST`` to a DECIMAL too narrow for it is NULL. A
record whose arithmetic overflows would otherwise stop a job that Flink runs on, every time it
restarts.
"""

from __future__ import annotations

from typing import Callable, Mapping

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F
from sqlglot import exp

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.aggregates import AGGREGATES, Result
from stategate.analyzer.layout import value_of
from stategate.analyzer.model import Aggregate, WindowAggregate, sql_key
from stategate.analyzer.families import Family
from stategate.analyzer.functions import flink_call, java_double
from stategate.analyzer.value_types import INTEGER_BITS, Typing, exact_type, text_digits, text_length


#: Operators whose result type depends on their operands' types. Flink types an integer literal as
#: an INT (a BIGINT past its range); Spark gives one the fewest digits it needs when it meets a
#: DECIMAL, so ``price / 3`` of a DECIMAL(10, 2) would keep 6 digits of scale on Spark against
#: Flink's 13. Cast, the literal is an INT on both.
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_INT, _BIGINT, _INT_MAX = exp.DType.INT, exp.DType.BIGINT, 2**31 - 1
#: The operators whose integer result can pass its type's range, and Spark's function for each that
#: gives NULL where it does (the operands' own operator otherwise).
_WRAPPING: Mapping[type[exp.Expr], str] = {exp.Add: "try_add", exp.Sub: "try_subtract", exp.Mul: "try_multiply"}
#: The integer type of each width.
_INTEGER_TYPES = {bits: kind for kind, bits in INTEGER_BITS.items()}
#: The exact types, whose SUM and AVG Spark's own aggregate functions type otherwise than Flink.
_EXACT = set(INTEGER_BITS) | {exp.DType.DECIMAL}
#: Marks (in a node's ``meta``) the call of an aggregation over the windows of another: it is
#: computed here, whatever the windows it reads computed under the same key (an outer ``COUNT(*)``
#: over windows that kept a ``COUNT(*)``); only its argument and FILTER read their columns.
_OWN_CALL = "stategate.own_call"


def to_spark_sql(expr: exp.Expr, columns: Mapping[str, str], typing: Typing | None = None,
                 state_key: bool = False) -> str:
    """Spark SQL text of ``expr`` with every sub-expression found in ``columns`` (by canonical key)
    replaced by a reference to that DataFrame column. With the ``typing`` of ``expr``'s columns,
    its arithmetic goes past its type's range as Flink's does. A ``state_key`` (a group key as the
    state keeps it) computes the functions Spark types otherwise than Flink (:func:`_spark_typed`)
    in Spark's type: the key's type is its state's schema, which deployed checkpoints hold so
    (:func:`key_read` gives it Flink's type where the query reads it)."""
    return translated(expr, columns, typing, state_key).sql(dialect="spark")


def translated(expr: exp.Expr, columns: Mapping[str, str], typing: Typing | None = None,
               state_key: bool = False) -> exp.Expr:
    """``expr`` as :func:`to_spark_sql` writes it, before it is written."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        key = sql_key(node)
        if key in columns and not node.meta.get(_OWN_CALL):
            return exp.column(columns[key], quoted=True)
        if isinstance(node, exp.Column):
            raise SQLModelError(f"{node.sql(dialect='flink')} is not available at this point of the query",
                                clause=expr.sql(dialect="flink"))
        if isinstance(node, exp.Literal) and node.is_int and isinstance(node.parent, _ARITHMETIC):
            return exp.cast(node.copy(), _literal_type(node))
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
            # Flink counts an array's elements from 1, where Spark's [] counts from 0, and reads a
            # map by its key: Spark's element_at does both, NULL where there is none, as Flink's.
            return exp.Anonymous(this="try_element_at", expressions=[rewritten(node.this), rewritten(node.expressions[0])])
        if typing is not None:
            found = _past_range(node, typing, rewritten) or _as_text(node, typing, rewritten) \
                or (None if state_key else _in_flink_type(node, typing, rewritten)) \
                or _as_flink_computes(node, typing, rewritten) or flink_call(node, typing, rewritten)
            if found is not None:
                return found
        return node

    def rewritten(child: exp.Expr) -> exp.Expr:
        return child.transform(rewrite, copy=False)

    return rewritten(expr.copy())


def to_column(expr: exp.Expr, columns: Mapping[str, str], typing: Typing | None = None,
              name: str | None = None, state_key: bool = False) -> SparkColumn:
    """:func:`to_spark_sql` as a column, named ``name`` if given (in the same call to the JVM)."""
    sql = to_spark_sql(expr, columns, typing, state_key)
    return F.expr(f"{sql} AS {quoted(name)}" if name is not None else sql)


def key_read(expr: exp.Expr, name: str, typing: Typing) -> SparkColumn:
    """The group key ``expr``, held in the column ``name`` as its state keeps it
    (:func:`to_spark_sql`'s ``state_key``), in the type the query reads it in: Flink's, where
    the state keeps Spark's (``FLOOR(score)`` a DOUBLE, kept in a BIGINT)."""
    if any(_spark_typed(node, typing) for node in expr.walk()):
        return F.col(name).cast(typing.of(expr).sql(dialect="spark")).alias(name)
    return F.col(name)


def quoted(name: str) -> str:
    """The column ``name`` as Spark SQL names it: quoted, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def whole_windows_aggregate(aggregate: Aggregate, columns: Mapping[str, str], typing: Typing) -> SparkColumn:
    """``aggregate`` over whole windows of the aggregation it reads (``WindowAggregate.per_window``),
    as Spark's own aggregate functions compute Flink's result in a micro-batch: a SUM of TINYINT,
    SMALLINT or INT wraps in its type (Spark's is a BIGINT); an AVG of integers is of their type, the
    quotient of their sum and count truncated (Spark's is a DOUBLE); a SUM of DECIMAL(p, s) is a
    DECIMAL(38, s) and an AVG one of 38 digits with at least 6 of scale. ``typing`` types its
    argument, ``columns`` are the windows' (:func:`to_spark_sql`)."""
    own = aggregate.expr.copy()
    head = own.find(exp.AggFunc)
    assert head is not None, f"{aggregate.written}: an aggregate call"
    head.meta[_OWN_CALL] = True
    call = translated(own, columns, typing)
    function, result = AGGREGATES[aggregate.function], _result_type(aggregate, typing)
    if result is None or function.result not in (Result.SUM, Result.MEAN) or result.this not in _EXACT:
        return F.expr(call.sql(dialect="spark"))
    bits = INTEGER_BITS.get(result.this)
    if function.result is Result.SUM:
        return F.expr((_cut(call, bits) if bits is not None and bits < 64 else exp.cast(call, result)).sql(dialect="spark"))

    def called(kind: type[exp.AggFunc]) -> exp.Expr:  # the call, FILTER and DISTINCT kept, as another function
        found = call.copy()
        average = found.find(exp.Avg)  # the call itself, or inside its FILTER
        assert average is not None, f"{aggregate.written}: an AVG"
        other = kind(this=average.this)
        if average is found:
            return other
        average.replace(other)
        return found

    quotient = (exp.IntDiv if bits is not None else exp.Div)(this=called(exp.Sum), expression=called(exp.Count))
    return F.expr(exp.cast(quotient, result).sql(dialect="spark"))


def results_typing(typing: Typing, aggregate: WindowAggregate) -> Typing:
    """The typing past ``aggregate``, whose input ``typing`` types: its group keys in their own
    types, its aggregates' results as Flink types them (``SUM`` of an INT an INT, which sqlglot
    would call a BIGINT)."""
    known = {k.value.key: typing.of(k.value.expr) for k in aggregate.group_keys if not k.is_window}
    for agg in aggregate.aggregates:
        found = _result_type(agg, typing)
        if found is not None:
            known[agg.expr_key] = found
    return typing.knowing(known)


def _result_type(aggregate: Aggregate, typing: Typing) -> exp.DataType | None:
    """Flink's type of ``aggregate``'s result, its argument typed by ``typing``
    (:meth:`AggregateFunction.result_type`)."""
    function = AGGREGATES.get(aggregate.function)
    if function is None:
        return None
    return function.result_type(typing.of(value_of(aggregate)) if aggregate.args else None)


def _past_range(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """``node`` as Flink computes it where its result can pass its type's range: an addition,
    subtraction, multiplication or division (:func:`_quotient`) of integers (in the wider
    operand's type, as Flink types it), a negation, a CAST of an integer to a narrower integer type
    or of a fraction to any integer type (:func:`_java_narrowed`; a DECIMAL's truncated, then
    cut), a CAST of a number to a DECIMAL; its operands ``translated``. None for any other node.

    The result is Spark's own where it stays in range (``try_add``...); past it, the exact result
    (in a long, or in 38 digits for a long's), cut to the type's bits as Java's arithmetic cuts it."""
    if isinstance(node, tuple(_WRAPPING)):
        left_bits, right_bits = _operand_bits(node.this, typing), _operand_bits(node.expression, typing)
        if left_bits is None or right_bits is None:
            return None
        width = max(left_bits, right_bits)
        left, right = translated(node.this), translated(node.expression)
        exact = node.__class__(this=_widened(left, width), expression=_widened(right, width))
        quick = exp.Anonymous(this=_WRAPPING[type(node)], expressions=[left, right])
        return exp.Coalesce(this=quick, expressions=[_cut(exact, width)])
    if isinstance(node, exp.Div):
        left_bits, right_bits = _operand_bits(node.this, typing), _operand_bits(node.expression, typing)
        if left_bits is None or right_bits is None:
            return None
        return _quotient(translated(node.this), translated(node.expression), max(left_bits, right_bits))
    if isinstance(node, exp.Neg) and not isinstance(node.this, exp.Literal):
        bits = _operand_bits(node.this, typing)
        if bits is None:
            return None
        operand = translated(node.this)
        zero = exp.cast(exp.Literal.number(0), _INTEGER_TYPES[bits])
        return exp.Coalesce(this=exp.Anonymous(this="try_subtract", expressions=[zero, operand]),
                            expressions=[_cut(exp.Neg(this=_widened(operand, bits)), bits)])
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.DECIMAL \
            and typing.family(node.this) in (Family.EXACT, Family.FLOATING):
        # A number past the DECIMAL's digits is NULL on Flink.
        return exp.TryCast(this=translated(node.this), to=node.to.copy(), safe=True)
    if isinstance(node, exp.Cast) and node.to.this in INTEGER_BITS:
        target, source = INTEGER_BITS[node.to.this], typing.of(node.this).this
        if source in exp.DataType.FLOAT_TYPES or source == exp.DType.DECIMAL:
            # Spark's own cast where the value fits, else Java's narrowing of it (judged before the
            # operand is translated, which rewrites it in place).
            floating = _floating(node.this, typing)
            value = translated(node.this)
            fitting = exp.TryCast(this=value, to=node.to.copy(), safe=True)
            narrowed = _java_narrowed(value, target) if floating else _cut(_truncated(value), target)
            return exp.Coalesce(this=fitting, expressions=[narrowed])
        bits = typing.integer_bits(node.this)
        fits = isinstance(node.this, exp.Literal) and node.this.is_int and -2 ** (target - 1) <= int(node.this.name) < 2 ** (target - 1)
        if bits is None or bits <= target or fits:
            return None
        return _cut(translated(node.this), target)
    return None


def _as_text(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """A CAST to a text type as Flink computes it where Spark's differs: a BOOLEAN written in
    capitals (``TRUE``, where Spark's is ``true``), a time with every digit of a second its type has
    (a TIMESTAMP(3)'s ``08:01:00.000``, where Spark drops a zero fraction), and the text cut to the
    length of a VARCHAR(n) or CHAR(n), a CHAR's padded to it with spaces (``CHAR`` is ``CHAR(1)``):
    Spark's CAST keeps a text whole, its lengths hold for a table's columns only. Its operand
    ``translated``. None for any other node (the analyzer refuses those casts it cannot write so:
    ``analyzer.runnable``)."""
    if not isinstance(node, exp.Cast) or not node.to.is_type(*exp.DataType.TEXT_TYPES):
        return None
    length = text_length(node.to)
    kind = typing.of(node.this)
    written = _written_as_flink(node.this, kind, translated)
    if length is None:
        return written
    if written is None:
        value = translated(node.this)
        written = value if kind.is_type(*exp.DataType.TEXT_TYPES) else exp.cast(value, exp.DType.TEXT)
    if node.to.this == exp.DType.CHAR:  # Spark's rpad also cuts a longer text to the length
        return exp.Anonymous(this="rpad", expressions=[written, exp.Literal.number(length), exp.Literal.string(" ")])
    return exp.Substring(this=written, start=exp.Literal.number(1), length=exp.Literal.number(length))


def _written_as_flink(operand: exp.Expr, kind: exp.DataType,
                      translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """``operand``, of type ``kind``, as text where Flink writes it otherwise than Spark: a BOOLEAN
    or a time (:func:`_as_text`); None for any other."""
    if kind.this == exp.DType.BOOLEAN:
        value = translated(operand)
        return exp.Case(ifs=[exp.If(this=value, true=exp.Literal.string("TRUE")),
                             exp.If(this=exp.Not(this=value.copy()), true=exp.Literal.string("FALSE"))])
    digits = text_digits(kind)
    if digits is None:
        return None
    pattern = "yyyy-MM-dd HH:mm:ss" + ("." + "S" * digits if digits else "")
    return exp.Anonymous(this="date_format", expressions=[translated(operand), exp.Literal.string(pattern)])


def _as_flink_computes(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """``node`` as Flink computes it where Spark's function of the same name differs: a division in
    floating point by zero is Java's (``Infinity``, ``-Infinity``, ``NaN``), where Spark's fails the
    query (NULL without its ANSI mode); a comparison with a NaN (:func:`_compared_as_java`);
    ``FLOOR(t TO unit)`` and ``CEIL(t TO unit)`` of a time, which Spark's FLOOR does not take;
    ``TRUNCATE`` cuts toward zero to its places in its argument's kind (sqlglot writes Spark a cast
    to BIGINT); ``TIMESTAMPADD`` of a DATE by whole days is a DATE, where Spark's is a TIMESTAMP;
    its operands ``translated``. None for any other node. (``REGEXP_EXTRACT``'s group, 0 where none
    is written, the dialect parses; the functions of Flink's that Spark has not,
    :mod:`analyzer.functions` writes.)"""
    if isinstance(node, exp.Div) and (_floating(node.this, typing) or _floating(node.expression, typing)):
        left, right = translated(node.this), translated(node.expression)
        # NaN / 0 and 0 / 0 are NaN (Spark orders NaN above every number: asked first); NULL / 0 is NULL.
        by_zero = exp.Case(ifs=[
            exp.If(this=_is_nan(left), true=java_double("NaN")),
            exp.If(this=exp.GT(this=left.copy(), expression=exp.Literal.number(0)), true=java_double("Infinity")),
            exp.If(this=exp.LT(this=left.copy(), expression=exp.Literal.number(0)), true=java_double("-Infinity")),
            exp.If(this=exp.EQ(this=left.copy(), expression=exp.Literal.number(0)), true=java_double("NaN"))])
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=right.copy(), expression=exp.Literal.number(0)), true=by_zero)],
                        default=exp.Div(this=left, expression=right))
    if isinstance(node, _COMPARISONS) and (_floating(node.this, typing) or _floating(node.expression, typing)):
        return _compared_as_java(node, typing, translated)
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
        unit, value = node.args["to"].name.upper(), translated(node.this)
        floor = exp.TimestampTrunc(this=value, unit=exp.var(unit))
        if isinstance(node, exp.Floor):
            return floor
        # CEIL: a time on the unit's boundary is its own ceiling.
        return exp.If(this=exp.EQ(this=floor.copy(), expression=value.copy()), true=value.copy(),
                      false=exp.Add(this=floor.copy(), expression=exp.Interval(this=exp.Literal.string("1"),
                                                                              unit=exp.var(unit))))
    if isinstance(node, exp.TimestampAdd) and typing.of(node).is_type(exp.DType.DATE):
        # Spark's TIMESTAMPADD makes a TIMESTAMP of a DATE by any unit.
        return exp.cast(exp.TimestampAdd(this=translated(node.this), expression=translated(node.expression),
                                         unit=node.args["unit"].copy()), exp.DType.DATE)
    if isinstance(node, exp.Trunc):
        kind, written = typing.of(node), node.args.get("decimals")
        digits = exact_type(typing.model, node) if kind.is_type(exp.DType.DECIMAL) else None
        if digits is not None:  # Flink's (and Spark's) digits, where sqlglot keeps the argument's precision
            kind = exp.DataType.build(f"DECIMAL({digits[0]}, {digits[1]})")
        value = translated(node.this)
        places = translated(written) if written is not None else exp.Literal.number(0)
        toward_zero = exp.If(this=exp.LT(this=value.copy(), expression=exp.Literal.number(0)),
                             true=exp.Anonymous(this="ceil", expressions=[value.copy(), places.copy()]),
                             false=exp.Anonymous(this="floor", expressions=[value, places]))
        return exp.cast(toward_zero, kind)
    return None


def _spark_typed(node: exp.Expr, typing: Typing) -> bool:
    """Whether ``node`` is a function Spark computes in a type of its own where Flink keeps its
    argument's: ``FLOOR(x)`` and ``CEIL(x)`` of an integer or a floating-point number (a BIGINT
    on Spark), ``SIGN(x)`` of any number but a DOUBLE (a DOUBLE on Spark)."""
    if isinstance(node, (exp.Floor, exp.Ceil)):
        return node.args.get("to") is None and not node.args.get("decimals") \
            and (typing.integer_bits(node.this) is not None or _floating(node.this, typing))
    return isinstance(node, exp.Sign) and typing.of(node.this).is_type(*exp.DataType.NUMERIC_TYPES) \
        and not typing.of(node.this).is_type(exp.DType.DOUBLE)


#: The least magnitude from which a DOUBLE, and a FLOAT, has no fraction: its own floor and ceiling.
_WHOLE_FROM = {exp.DType.DOUBLE: 2 ** 52, exp.DType.FLOAT: 2 ** 23}


def _in_flink_type(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr | None:
    """A function :func:`_spark_typed` names, in its argument's type as Flink's: ``SIGN(x)`` cast
    to it, ``FLOOR(x)`` or ``CEIL(x)`` of an integer the integer itself, of a DOUBLE or FLOAT Java's
    ``Math.floor`` or ``Math.ceil`` (Spark's BIGINT makes NaN 0 and an infinity a long's bound; a
    ceiling between -1 and 0 is -0.0); its operand ``translated``. None for any other node."""
    if not _spark_typed(node, typing):
        return None
    if isinstance(node, exp.Sign):
        return exp.cast(exp.Sign(this=translated(node.this)), typing.of(node.this))
    if typing.integer_bits(node.this) is not None:
        return translated(node.this)
    kind = exp.DType.FLOAT if typing.of(node.this).is_type(exp.DType.FLOAT) else exp.DType.DOUBLE
    value = translated(node.this)
    zero = exp.Literal.number(0)
    # NaN is above every number on Spark, so neither here nor below it: itself, as an infinity is.
    may_have_fraction = exp.and_(
        exp.LT(this=exp.Abs(this=value.copy()), expression=exp.Literal.number(_WHOLE_FROM[kind])),
        exp.NEQ(this=value.copy(), expression=zero))
    spark = exp.Anonymous(this="floor" if isinstance(node, exp.Floor) else "ceil", expressions=[value.copy()])
    ifs = [exp.If(this=may_have_fraction, true=exp.cast(spark, kind))]
    if isinstance(node, exp.Ceil):
        below_zero = exp.and_(exp.GT(this=value.copy(), expression=exp.Literal.number(-1)),
                              exp.LT(this=value.copy(), expression=zero.copy()))
        ifs.insert(0, exp.If(this=below_zero, true=exp.cast(java_double("-0.0"), kind)))
    return exp.Case(ifs=ifs, default=exp.cast(value, kind))


#: The comparisons of two values, which Java's arithmetic (Flink's) makes of floating-point numbers otherwise than Spark.
_COMPARISONS = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ)


def _compared_as_java(node: exp.Expr, typing: Typing, translated: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """A comparison with a floating-point operand as Java makes it (Flink's): a NaN is equal to
    nothing, itself included, and neither above nor below any number, so every comparison with one
    is FALSE, but ``<>``, TRUE; where the other operand is NULL, NULL. Spark orders NaN above every
    number and equal to itself (so ``SQRT(-1) > 1`` held there, and a FILTER counted the row)."""
    left, right = translated(node.this), translated(node.expression)
    nans = [_is_nan(operand) for operand, written in ((left, node.this), (right, node.expression))
            if _floating(written, typing)]
    with_nan = exp.and_(exp.or_(*nans), exp.Not(this=exp.Is(this=left.copy(), expression=exp.null())),
                        exp.Not(this=exp.Is(this=right.copy(), expression=exp.null())))
    return exp.Case(ifs=[exp.If(this=with_nan, true=exp.true() if isinstance(node, exp.NEQ) else exp.false())],
                    default=type(node)(this=left, expression=right))


def _is_nan(value: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="isnan", expressions=[value.copy()])


def _quotient(left: exp.Expr, right: exp.Expr, width: int) -> exp.Expr:
    """Java's quotient of two integers of ``width`` bits, Flink's: truncated toward zero (as
    Spark's ``div``), cut to the width (an INT's ``-2147483648 / -1`` is itself). A division by
    zero fails the query, as it fails Flink's job, where Spark's ANSI mode holds (the session's
    default; the arguments of an aggregation of whole windows, built without it by
    :func:`spark_jobs.state.wrapping_sums`, divide by zero into NULL)."""
    if width < 64:
        return _cut(exp.IntDiv(this=_widened(left, width), expression=_widened(right, width)), width)
    # Of longs, only MIN / -1 passes the range, where Spark's div fails: a division by -1 is a negation.
    by_minus_one = exp.EQ(this=right.copy(), expression=exp.Literal.number(-1))
    return exp.Case(ifs=[exp.If(this=by_minus_one, true=_cut(exp.Neg(this=_widened(left, width)), width))],
                    default=exp.IntDiv(this=left, expression=right))


def java_narrowed(value: str, bits: int) -> str:
    """A floating-point value (Spark SQL text) as Java casts it to an integer type of ``bits``
    (:func:`_java_narrowed`), as Spark SQL text: how a STDDEV's or VARIANCE's result (Flink's
    DOUBLE) comes back to its argument's type."""
    return _java_narrowed(_written(value), bits).sql(dialect="spark")


def wrapped(value: str, bits: int) -> str:
    """An exact integer (Spark SQL text, up to 38 digits) cut to its low ``bits`` as Java's
    arithmetic cuts it (:func:`_cut`), as Spark SQL text: how an integer sum comes back to the
    type Flink sums it in."""
    return _cut(_widened(_written(value), bits), bits).sql(dialect="spark")


def _written(value: str) -> exp.Expr:
    """Spark SQL text as an operand of an expression sqlglot writes, kept as it is."""
    return exp.var(f"({value})")


def _java_narrowed(value: exp.Expr, bits: int) -> exp.Expr:
    """A floating-point ``value`` as Java casts it to an integer type of ``bits`` (Flink's CAST):
    truncated toward zero and held to a long's range for a BIGINT, an int's otherwise (NaN is 0); a
    TINYINT or SMALLINT then keeps the int's low bits, as ``(byte) d`` is ``(byte) (int) d``: 300.9
    is 44, 5e9 is -1."""
    held_bits = 64 if bits == 64 else 32
    low, high = -(2 ** (held_bits - 1)), 2 ** (held_bits - 1) - 1
    held = exp.Case(ifs=[exp.If(this=_is_nan(value), true=exp.Literal.number(0)),
                         exp.If(this=exp.GTE(this=value, expression=exp.Literal.number(high)),
                                true=exp.Literal.number(high)),
                         exp.If(this=exp.LTE(this=value, expression=exp.Literal.number(low)),
                                true=exp.Literal.number(low))],
                    default=exp.cast(value, exp.DType.BIGINT))
    return _cut(held, bits) if bits < held_bits else exp.cast(held, _INTEGER_TYPES[bits])


def _floating(expr: exp.Expr, typing: Typing) -> bool:
    """Whether Flink computes ``expr`` in floating point: a FLOAT or DOUBLE, a literal with an
    exponent (``1e10``; ``2.5`` is a DECIMAL), or arithmetic with such an operand. (sqlglot types
    a DECIMAL times a DOUBLE as a DECIMAL, and ``2.5`` as a DOUBLE.)"""
    if isinstance(expr, exp.Paren):
        return _floating(expr.this, typing)
    if isinstance(expr, _ARITHMETIC):
        return _floating(expr.this, typing) or _floating(expr.expression, typing)
    if isinstance(expr, exp.Literal):
        return not expr.is_string and "e" in expr.name.lower()
    return typing.family(expr) is Family.FLOATING


def _truncated(value: exp.Expr) -> exp.Expr:
    """An exact ``value`` truncated toward zero, exactly (Spark's cast to a DECIMAL of scale 0 rounds)."""
    negative = exp.LT(this=value, expression=exp.Literal.number(0))
    return exp.If(this=negative, true=exp.Ceil(this=value), false=exp.Floor(this=value))


def _literal_type(literal: exp.Literal) -> exp.DType:
    """An integer literal's type in arithmetic, as Flink types it: an INT, a BIGINT past its range."""
    return _INT if abs(int(literal.name)) <= _INT_MAX else _BIGINT


def _operand_bits(operand: exp.Expr, typing: Typing) -> int | None:
    """The bits of an integer operand's type (a literal's as ``to_spark_sql`` casts it)."""
    if isinstance(operand, exp.Literal) and operand.is_int:
        return INTEGER_BITS[_literal_type(operand)]
    return typing.integer_bits(operand)


def _widened(operand: exp.Expr, width: int) -> exp.Expr:
    """An operand in a type that holds any sum, difference or product of two of ``width`` bits."""
    return exp.cast(operand.copy(), exp.DType.BIGINT if width < 64 else exp.DataType.build("DECIMAL(38, 0)"))


def _cut(exact: exp.Expr, width: int) -> exp.Expr:
    """An exact integer cut to its low ``width`` bits, read as a signed integer of that width: what
    Java's arithmetic leaves of it."""
    modulus, half = 2 ** width, 2 ** (width - 1)
    kept = exp.Anonymous(this="pmod", expressions=[
        exp.Add(this=exp.Anonymous(this="pmod", expressions=[exact, exp.Literal.number(modulus)]),
                expression=exp.Literal.number(half)),
        exp.Literal.number(modulus)])
    return exp.cast(exp.Sub(this=exp.paren(kept), expression=exp.Literal.number(half)), _INTEGER_TYPES[width])

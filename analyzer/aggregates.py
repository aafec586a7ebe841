"""The aggregates the engine runs, as one table: what each keeps in state and how that state merges.

As Spark's ``DeclarativeAggregate`` and Flink's ``AggregateFunction`` keep an aggregate's buffer and
its merge together, each entry here says, per value family of the argument, which state fields
the aggregate holds and how each is filled from input rows (:class:`Fill`: Spark's aggregate
function, what of a row it takes, and how two partial states of the field become one: the slices
of a HOP or CUMULATE window, sessions that merge), and :class:`Result` how the aggregate's result
comes from its state. A DISTINCT aggregate keeps the set of its values, or, for those that follow
arrival order, every value with its arrival, of which its result takes each value once
(:class:`Distinct`).

FIRST_VALUE, LAST_VALUE, LISTAGG, ARRAY_AGG and JSON_ARRAYAGG follow the order rows arrive in. A
Spark stream gives its rows no order, so each row carries where it arrived from (:data:`ARRIVAL`:
the source file's modification time, its path's hash and the row's line, or a Kafka record's
timestamp, partition and offset), and these aggregates keep each value with it: the first and the
last by that order (a number or a time in its own type beside its arrival as one number,
:data:`ARRIVAL_ORDER`, which Spark's hash aggregation updates in place), or all of them, ordered
when the result is read. The order is the rows' own, so it does not depend on how the rows were cut
into micro-batches.

Everything that needs to know an aggregate reads it here: the state layout (which fields a slot
shape has, :mod:`analyzer.layout`), what the engine can run (:mod:`analyzer.runnable`) and the
engine's buffer, slice assembly and results (:mod:`spark_jobs.state`). The table is plain data, so
the analyzer and the Airflow gate read it without PySpark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping

from sqlglot import exp

from stategate.analyzer.families import EXACT_SQUARE_DIGITS, MAX_DIGITS, Family


class Pool(str, Enum):
    """The kinds of slot a buffer has, by what their fields hold: counts, sums and MIN/MAX of
    numbers and times (plain), fields of variable width: MIN/MAX of text, values kept with their
    arrival (text: such a field stops Spark's hash aggregation, so only jobs that need one pay for
    it) and sets of values (distinct)."""

    PLAIN = "plain"
    TEXT = "text"
    DISTINCT = "distinct"


class Distinct(str, Enum):
    """How an aggregate runs with DISTINCT.

    ``SET``: over the set of its values, which its state keeps instead of its own fields (a DISTINCT
    SUM adds the set up when the window is emitted). ``FIRST_ARRIVALS``: over each value at its
    first arrival, from every value with its arrival (its own state, or its ``distinct_state``): a
    list in arrival order needs the arrivals a set loses. (Flink 2.3 may run LISTAGG and ARRAY_AGG
    with DISTINCT as a second aggregation over the distinct values, in the order of its hash table:
    ``LISTAGG(DISTINCT x)`` of 2, 3, 3 gave ``3,2`` over TUMBLE windows, and ``2,3`` over SESSION
    windows, which it aggregates row by row, as beside other DISTINCT calls over TUMBLE. The same
    values, in an order it does not define.) ``REFUSED``: Flink refuses it."""

    SET = "set"
    FIRST_ARRIVALS = "first_arrivals"
    REFUSED = "refused"


class Takes(Enum):
    """What of an input row a state field takes (:mod:`spark_jobs.state` writes each as SQL)."""

    ROW = "row"  # nothing but that the row counts (COUNT: its guard says which rows do)
    VALUE = "value"  # the value in the field's type, a time as its microseconds
    SQUARE = "square"  # the value's square
    SMALL_VALUE = "small_value"  # the value, where Spark multiplies it by itself exactly (else 0)
    LARGE_VALUE = "large_value"  # the value in DOUBLE, where it is not (else 0)
    SMALL_SQUARE = "small_square"  # the value's exact square, where Spark multiplies it exactly (else 0)
    LARGE_SQUARE = "large_square"  # the value's square in DOUBLE, where it is not exact (else 0)
    TEXT = "text"  # the value as text
    KEYED = "keyed"  # the value with its key, both as text
    SKETCHED = "sketched"  # the value as a sketch hashes it
    ARRIVED = "arrived"  # the value as text, after where it arrived from, ordered by that
    ORDER = "order"  # where the row arrived from, as one number (:data:`ARRIVAL_ORDER_TYPE`)


class Fill(Enum):
    """How a state field is filled from input rows: the Spark aggregate function (``spark``) of
    what it takes of a row (``takes``), and how two partial states of the field become one
    (``merge``): ``union``, the distinct values of both sets; ``append``, both lists, in no order;
    ``concat``, the lists of a window's slices one after the other, each in arrival order (the
    later slice's first for a window TVF's HOP windows, the earlier's otherwise, as Flink merges
    slices and panes: ``analyzer.model.Window.latest_slice_first``); ``min_by``/``max_by``, the
    value of the earliest or latest arrival, by the slot's :data:`ARRIVAL_ORDER` field; any other,
    Spark's aggregate function of that name over the partial states."""

    COUNT = ("count", "sum", Takes.ROW)
    SUM = ("sum", "sum", Takes.VALUE)
    SUM_SQUARES = ("sum", "sum", Takes.SQUARE)
    SUM_SMALL = ("sum", "sum", Takes.SMALL_VALUE)
    SUM_LARGE = ("sum", "sum", Takes.LARGE_VALUE)
    SUM_SMALL_SQUARES = ("sum", "sum", Takes.SMALL_SQUARE)
    SUM_LARGE_SQUARES = ("sum", "sum", Takes.LARGE_SQUARE)
    MIN = ("min", "min", Takes.VALUE)
    MAX = ("max", "max", Takes.VALUE)
    VALUE_SET = ("collect_set", "union", Takes.VALUE)
    VALUE_LIST = ("collect_list", "append", Takes.TEXT)
    KEYED_VALUES = ("collect_list", "append", Takes.KEYED)  # every value with its key (the first argument)
    SKETCH = ("hll_sketch_agg", "hll_union_agg", Takes.SKETCHED)
    #: A value kept with its arrival: the earliest, the latest, all of them.
    FIRST_BY_ARRIVAL = ("min", "min", Takes.ARRIVED)
    LAST_BY_ARRIVAL = ("max", "max", Takes.ARRIVED)
    ALL_BY_ARRIVAL = ("collect_list", "concat", Takes.ARRIVED)
    #: The earliest or latest arrival itself, and the value that came with it (Spark's buffer for
    #: ``min_by`` is the value and the order).
    EARLIEST_ARRIVAL = ("min", "min", Takes.ORDER)
    LATEST_ARRIVAL = ("max", "max", Takes.ORDER)
    FIRST_BY_ORDER = ("min_by", "min_by", Takes.VALUE)
    LAST_BY_ORDER = ("max_by", "max_by", Takes.VALUE)

    def __init__(self, spark: str, merge: str, takes: Takes) -> None:
        self.spark, self.merge, self.takes = spark, merge, takes

    @property
    def by_order(self) -> bool:
        """A value taken by its arrival, which its slot's :data:`ARRIVAL_ORDER` field holds."""
        return self in (Fill.FIRST_BY_ORDER, Fill.LAST_BY_ORDER)


@dataclass(frozen=True)
class Field:
    """A kind of state field. A slot's field is named by the stem and the slot's number (``x2``).

    :param stem: the name stem
    :param sql_type: the type it keeps (``decimal`` at the scale of its slot's shape)
    :param idle: how it is filled while no aggregate holds it (a guard that never holds keeps it
        empty)
    :param pool: the pool of the slots that have it
    :param squared: a decimal kept at twice its slot's scale (a sum of squares)
    :param generic: whether a generic slot has it. A generic slot's fields are fixed for the life of
        every checkpoint that has one, so a kind of field added later is in shaped slots only.
    :param carried: whether a re-seed carries it. A re-seed aggregates input rows and the old
        state's in one aggregation (:mod:`analyzer.reseed`): a count, a sum, an extreme or the values
        of a list take both, a sketch cannot take a value and a sketch alike.
    """

    stem: str
    sql_type: str
    idle: Fill
    pool: Pool
    squared: bool = False
    generic: bool = True
    carried: bool = True

    @property
    def serialized(self) -> bool:
        """Whether Spark keeps it as a list or a set, serialized: its state reader returns bytes."""
        return self.idle.spark in ("collect_list", "collect_set")

    @property
    def buffer_width(self) -> int:
        """How many columns Spark's buffer for it has: an exact sum also says whether it is empty,
        a value kept by its arrival keeps that arrival (Spark's ``min_by``: the value, then its order)."""
        return 2 if (self.sql_type == "decimal" and self.idle.spark == "sum") or self.idle.by_order else 1


COUNTED = Field("c", "int", Fill.COUNT, Pool.PLAIN)
EXACT_SUM = Field("x", "decimal", Fill.SUM, Pool.PLAIN)
FLOATING_VALUE = Field("d", "double", Fill.SUM, Pool.PLAIN)
#: An integer's SUM, MIN or MAX, or the sum of an integer AVG, in a long as Spark keeps it; a sum
#: wraps past a long's range as Flink's does (``spark_jobs.state.wrapping_sums``). Slots recorded
#: before it keep integers as exact numbers.
INTEGER_VALUE = Field("i", "bigint", Fill.SUM, Pool.PLAIN, generic=False)
EXACT_EXTREME = Field("o", "decimal", Fill.MAX, Pool.PLAIN)  # exact numbers, and times as microseconds
#: The digits a time's microseconds are kept in: those of every Flink TIMESTAMP (years 0000 to 9999)
#: fit 18, which a decimal holds in a long, as Spark keeps a time.
TIME_DIGITS = 18
TEXT_EXTREME = Field("s", "string", Fill.MAX, Pool.TEXT)
VALUES = Field("dv", "string", Fill.VALUE_SET, Pool.DISTINCT)
FLOATING_SQUARES = Field("q", "double", Fill.SUM, Pool.PLAIN, generic=False)
EXACT_SQUARES = Field("qx", "decimal", Fill.SUM, Pool.PLAIN, squared=True, generic=False)

#: Where a row arrived from, ordered as rows arrive: the source file's modification time, an
#: 8-digit hash of its path (files modified in the same millisecond come in an order their paths
#: fix) and the row's line in it; a Kafka record's timestamp, partition and offset. Three longs:
#: each value a LISTAGG keeps in state carries them, where a path would cost every value its length.
ARRIVAL = "struct<t:timestamp,f:bigint,n:bigint>"
#: The digits of :data:`ARRIVAL_ORDER`: the time's milliseconds (until the year 2286), the hash or
#: partition, the line or offset (below 10^15). File modification times and Kafka timestamps are
#: whole milliseconds.
ORDER_DIGITS = (13, 8, 15)
#: An arrival as one number, ``t`` ``f`` ``n`` in :data:`ORDER_DIGITS`: a field Spark's hash
#: aggregation updates in place, where a struct of the three makes it sort every micro-batch's rows.
ARRIVAL_ORDER_TYPE = f"decimal({sum(ORDER_DIGITS)},0)"
#: A value kept with its arrival as the two halves of :data:`ARRIVAL_ORDER`'s digits, each a long
#: (``h`` its higher 18, ``l`` its lower 18), ordered by them first; the value as text (one field
#: type whatever the argument's type, cast back when the result is read). In Spark's row format 40
#: bytes with a short text, where :data:`ARRIVED`'s nested struct takes 64.
ORDERED = "struct<h:bigint,l:bigint,v:string>"
#: FIRST_VALUE's and LAST_VALUE's state over text, and over a value of a type the declared columns
#: do not make certain.
FIRST_ORDERED = Field("fo", ORDERED, Fill.FIRST_BY_ARRIVAL, Pool.TEXT, generic=False)
LAST_ORDERED = Field("lo", ORDERED, Fill.LAST_BY_ARRIVAL, Pool.TEXT, generic=False)
#: A value kept with its arrival as a struct, as layouts recorded before :data:`ORDERED` keep it
#: (``StageLayout.ordered_arrivals``): FIRST_VALUE's and LAST_VALUE's over text (and over any value,
#: in slots recorded before numbers and times were kept in their own type), and every value of a list.
ARRIVED = f"struct<o:{ARRIVAL},v:string>"
FIRST_ARRIVED = Field("fa", ARRIVED, Fill.FIRST_BY_ARRIVAL, Pool.TEXT, generic=False)
LAST_ARRIVED = Field("la", ARRIVED, Fill.LAST_BY_ARRIVAL, Pool.TEXT, generic=False)
#: FIRST_VALUE's and LAST_VALUE's state over numbers and times: the earliest or latest arrival
#: (:data:`ARRIVAL_ORDER_TYPE`), and the value that came with it, in the type a MIN or MAX keeps it
#: in (times as microseconds). Spark's ``min_by``/``max_by`` fill the value; both stay in the text pool,
#: where slots recorded before keep them.
ARRIVAL_ORDER = Field("ao", ARRIVAL_ORDER_TYPE, Fill.EARLIEST_ARRIVAL, Pool.TEXT, generic=False)
EXACT_BY_ORDER = Field("ax", "decimal", Fill.FIRST_BY_ORDER, Pool.TEXT, generic=False)
INTEGER_BY_ORDER = Field("ai", "bigint", Fill.FIRST_BY_ORDER, Pool.TEXT, generic=False)
FLOATING_BY_ORDER = Field("ad", "double", Fill.FIRST_BY_ORDER, Pool.TEXT, generic=False)
ALL_ARRIVED = Field("al", ARRIVED, Fill.ALL_BY_ARRIVAL, Pool.TEXT, generic=False)
#: Every value with its arrival (LISTAGG, ARRAY_AGG, JSON_ARRAYAGG, LAST_VALUE with DISTINCT).
ALL_ORDERED = Field("ar", ORDERED, Fill.ALL_BY_ARRIVAL, Pool.TEXT, generic=False)
#: Each field of a value kept with its arrival, and the one a layout recorded before keeps in its place.
ARRIVED_BEFORE: Mapping[Field, Field] = {FIRST_ORDERED: FIRST_ARRIVED, LAST_ORDERED: LAST_ARRIVED,
                                         ALL_ORDERED: ALL_ARRIVED}
VALUE_LIST = Field("cl", "string", Fill.VALUE_LIST, Pool.TEXT, generic=False)  # every value, as text, in no order
#: A value kept with its key, both as text (JSON_OBJECTAGG's), and the list of them, in no order.
KEYED = "struct<k:string,v:string>"
KEYED_LIST = Field("kv", KEYED, Fill.KEYED_VALUES, Pool.TEXT, generic=False)
#: A HyperLogLog sketch of the values (Apache DataSketches', Spark's ``hll_sketch_agg``): a few
#: hundred bytes while the values are few (at lg_k 14, exact up to 913 of them, measured), about
#: 2^lg_k bytes at most (16,424 at lg_k 14).
SKETCH = Field("h", "binary", Fill.SKETCH, Pool.TEXT, generic=False, carried=False)
#: Every kind of field, in the order a slot's fields stand in the buffer.
FIELDS = (COUNTED, EXACT_SUM, FLOATING_VALUE, INTEGER_VALUE, EXACT_EXTREME, TEXT_EXTREME, VALUES, FLOATING_SQUARES, EXACT_SQUARES,
          FIRST_ARRIVED, LAST_ARRIVED, ALL_ARRIVED, VALUE_LIST, KEYED_LIST, SKETCH, ARRIVAL_ORDER, EXACT_BY_ORDER,
          INTEGER_BY_ORDER, FLOATING_BY_ORDER, ALL_ORDERED, FIRST_ORDERED, LAST_ORDERED)

#: What a constant argument after an aggregate's value is: LISTAGG's separator (a string) or
#: APPROX_COUNT_DISTINCT's accuracy (a number between 0 and 1).
SEPARATOR, ACCURACY = "separator", "accuracy"
#: APPROX_COUNT_DISTINCT's accuracy where none is written: VVR's.
DEFAULT_ACCURACY = 0.99


def sketch_size(accuracy: float) -> int:
    """The lg_k of the HyperLogLog sketch that counts with ``accuracy``, read as one minus the
    relative standard error, which is 1.04 / sqrt(2^lg_k): 14 (16,384 buckets, 0.8%) for VVR's
    default 0.99, 7 for 0.9; DataSketches takes 4 to 21."""
    return min(21, max(4, math.ceil(2 * math.log2(1.04 / (1 - accuracy)))))

#: The clauses the engine takes around or in an aggregate call: each turns the aggregate's way with
#: NULL values (``AggregateFunction.null_switch``).
IGNORE_NULLS, NULL_ON_NULL, ABSENT_ON_NULL = "IGNORE NULLS", "NULL ON NULL", "ABSENT ON NULL"
#: The nodes sqlglot parses ``IGNORE NULLS`` and ``RESPECT NULLS`` into, around the call or its value.
NULL_TREATMENTS = (exp.IgnoreNulls, exp.RespectNulls)


class Operands(Enum):
    """The argument types Flink's signature of an aggregate takes, as it refuses the others
    (probed in Flink 2.3: "Cannot apply 'SUM' to arguments of type 'SUM(<BOOLEAN>)'", "Max
    aggregate function does not support type: ''ARRAY''"): a BOOLEAN is no number there, though
    the state keeps it among exact values for a MIN or a MAX."""

    ANY = ("any value", frozenset[exp.DType]())
    NUMBERS = ("numbers", exp.DataType.INTEGER_TYPES | exp.DataType.REAL_TYPES)
    COMPARABLE = ("numbers, BOOLEAN, text and times", exp.DataType.INTEGER_TYPES | exp.DataType.REAL_TYPES
                  | exp.DataType.TEXT_TYPES | exp.DataType.TEMPORAL_TYPES | {exp.DataType.Type.BOOLEAN})
    TEXT = ("text", exp.DataType.TEXT_TYPES)

    def __init__(self, described: str, types: frozenset[exp.DType]) -> None:
        self.described, self.types = described, types

    def take(self, kind: exp.DataType) -> bool:
        """Whether Flink takes an argument of type ``kind`` (one whose type cannot be told, too)."""
        return self is Operands.ANY or kind.this == exp.DataType.Type.UNKNOWN or kind.this in self.types


#: A state: each field with how it is filled from input rows.
State = tuple[tuple[Field, Fill], ...]


class Result(Enum):
    """How an aggregate's result comes from its state (:func:`spark_jobs.state.final_value`)."""

    COUNT = "count"  # the count, 0 where none
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    MEAN = "mean"  # the sum over the count
    VAR_POP = "var_pop"  # (Σx² − (Σx)² / n) / n, from the count, sum and sum of squares
    VAR_SAMP = "var_samp"  # the same over n − 1
    STDDEV_POP = "stddev_pop"  # the square root of VAR_POP
    STDDEV_SAMP = "stddev_samp"
    FIRST = "first"  # the value that arrived first
    LAST = "last"
    LIST = "list"  # the values in arrival order, joined by the separator (a comma unless given)
    ARRAY = "array"  # the values in arrival order, NULLs among them
    MULTISET = "multiset"  # each value with how often it came, as a map (Flink's MULTISET)
    JSON_ARRAY = "json_array"  # the values in arrival order as a JSON array, ``[]`` where none
    JSON_OBJECT = "json_object"  # each value under its key in a JSON object, keys in order, ``{}`` where none
    ESTIMATE = "estimate"  # the sketch's estimate of how many distinct values came, 0 where none

    @property
    def spread(self) -> bool:
        """A variance or a standard deviation."""
        return self in (Result.VAR_POP, Result.VAR_SAMP, Result.STDDEV_POP, Result.STDDEV_SAMP)

    @property
    def sample(self) -> bool:
        return self in (Result.VAR_SAMP, Result.STDDEV_SAMP)

    @property
    def root(self) -> bool:
        return self in (Result.STDDEV_POP, Result.STDDEV_SAMP)

    @property
    def ordered(self) -> bool:
        """Follows the order rows arrive in."""
        return self in (Result.FIRST, Result.LAST, Result.LIST, Result.ARRAY, Result.JSON_ARRAY)


#: The results of their argument's type (a DECIMAL widened in :data:`_WIDENED`).
_OWN_TYPED = frozenset({Result.SUM, Result.MIN, Result.MAX, Result.MEAN, Result.FIRST, Result.LAST, Result.VAR_POP,
                        Result.VAR_SAMP, Result.STDDEV_POP, Result.STDDEV_SAMP})
#: The results that are collections of their argument's values, by the type each is (sqlglot reads
#: Flink's MULTISET as a LIST).
_COLLECTIONS = {Result.ARRAY: exp.DataType.Type.ARRAY, Result.MULTISET: exp.DataType.Type.LIST}
#: The results that are text whatever the argument's type.
_TEXT_RESULTS = frozenset({Result.LIST, Result.JSON_ARRAY, Result.JSON_OBJECT})
#: The results in which a DECIMAL argument widens to 38 digits.
_WIDENED = frozenset({Result.SUM, Result.MEAN, Result.VAR_POP, Result.VAR_SAMP, Result.STDDEV_POP, Result.STDDEV_SAMP})


@dataclass(frozen=True)
class AggregateFunction:
    """One aggregate the engine runs.

    :param name: its name in the model (sqlglot's: ``VARIANCE`` for Flink's ``VAR_SAMP`` and ``VARIANCE``)
    :param state: per value family of its argument, the state it keeps (``None``: whatever the family)
    :param result: how its result comes from that state
    :param flink: how Flink spells it, where the model's name differs
    :param integers_as: the family it computes integers in, where not as exact numbers (Flink
        computes a STDDEV or VARIANCE of integers in DOUBLE, then casts to the integer type)
    :param exact_digits: the most digits an exact argument's type may have for it to keep its
        values as exact numbers; a wider one's it keeps as :attr:`Family.WIDE`. A STDDEV or
        VARIANCE keeps the squares of a DECIMAL(p, s) at scale 2s, which takes 2p digits, and their
        sum in 38: past 16 (:data:`~analyzer.families.EXACT_SQUARE_DIGITS`; a DECIMAL(38, 18), whose
        squares at scale 36 keep 2 whole digits, or a DECIMAL(19, 19), whose sum of squares passes
        38 digits from 1 up) it keeps the values past those in DOUBLE, as Flink computes them all
    :param keyed: its first argument is a key (text, never NULL, each once in a group: JSON_OBJECTAGG's),
        its value the second
    :param literal: what a constant argument after its value is, where one may follow
        (:data:`SEPARATOR`, :data:`ACCURACY`)
    :param distinct: how it runs with DISTINCT
    :param distinct_state: the state it keeps with DISTINCT where its own cannot give the result
        (LAST_VALUE's latest arrival cannot tell which value first arrived last: it keeps every
        value with its arrival, as LISTAGG does)
    :param keeps_nulls: whether a NULL value counts by default (ARRAY_AGG keeps it, as Flink's
        default RESPECT NULLS does; JSON_OBJECTAGG keeps it as a JSON null); others skip NULLs
    :param null_switch: the clause that turns ``keeps_nulls`` the other way (ARRAY_AGG's IGNORE
        NULLS, JSON_ARRAYAGG's NULL ON NULL, JSON_OBJECTAGG's ABSENT ON NULL); the analyzer names
        the aggregate with it only where it is written (``Aggregate.modifiers``), so a clause that
        spells the default names the same state
    :param operands: the argument types Flink takes for its value
    :param own_type: its state takes exact values in their own type (a DECIMAL(10, 2) as one),
        and Spark's aggregate function keeps them as in Spark's own buffer (a sum in 10 digits
        more); otherwise in 38 digits, what an AVG or a STDDEV keeps, whose division and squares
        must not round
    """

    name: str
    state: Mapping[Family | None, State]
    result: Result
    flink: str = ""
    integers_as: Family | None = None
    exact_digits: int | None = None
    keyed: bool = False
    literal: str = ""
    distinct: Distinct = Distinct.SET
    distinct_state: State = ()
    keeps_nulls: bool = False
    null_switch: str = ""
    operands: Operands = Operands.ANY
    own_type: bool = False

    def __post_init__(self) -> None:
        if self.distinct_state and (None not in self.state or self.distinct is not Distinct.FIRST_ARRIVALS):
            # A slot's shape tells the DISTINCT state apart by the function alone (analyzer.layout.Shape).
            raise ValueError(f"{self.name}: a state of its own with DISTINCT needs one state over any value "
                             "and the first arrivals")

    def state_of(self, family: Family | None, distinct: bool = False) -> State | None:
        """The state it keeps over values of ``family`` (``distinct``: with DISTINCT, where it keeps
        no set); None where it takes no such argument."""
        if distinct and self.distinct_state:
            return self.distinct_state
        return self.state.get(family) if family in self.state else self.state.get(None)

    def takes(self, modifiers: str) -> bool:
        """Whether the engine runs it with the clauses written around the call (``Aggregate.modifiers``):
        none, or its ``null_switch``."""
        return not modifiers.strip() or self._switched(modifiers)

    def counts_nulls(self, modifiers: str) -> bool:
        """Whether a NULL value counts, with the clauses written around the call."""
        return self.keeps_nulls != self._switched(modifiers)

    def _switched(self, modifiers: str) -> bool:
        return bool(self.null_switch) and modifiers.strip() == self.null_switch

    @property
    def text_otherwise(self) -> bool:
        """Whether it keeps values of some families in their own type and any other as text (its
        state over any value): FIRST_VALUE and LAST_VALUE, whose slots recorded before keep every
        value as text."""
        return None in self.state and len(self.state) > 1

    @property
    def carried(self) -> bool:
        """Whether a re-seed can carry its state (:attr:`Field.carried`: not a sketch's)."""
        return all(field.carried for state in self.state.values() for field, _ in state)

    @property
    def value_at(self) -> int:
        """Which argument is the value it aggregates: the one after its key, if it has one."""
        return 1 if self.keyed else 0

    def kept_as(self, family: Family | None, integer: bool, digits: int | None = None) -> Family | None:
        """The family it keeps values of ``family`` in (``integer``: of an integer type; ``digits``:
        an exact type's, where known)."""
        if integer:
            return self.integers_as or family
        limit = self.exact_digits
        wide = family is Family.EXACT and digits is not None and limit is not None and digits > limit
        return Family.WIDE if wide else family

    @property
    def spelled(self) -> str:
        return self.flink or self.name

    def result_type(self, argument: exp.DataType | None) -> exp.DataType | None:
        """Flink's type of its result over an argument of type ``argument`` (None: no argument),
        where that is a number or the argument's own type: a count is a BIGINT; a SUM, an AVG and
        a STDDEV or VARIANCE of integers are of their type, as are a MIN, MAX, FIRST_VALUE or
        LAST_VALUE of anything; a SUM of DECIMAL(p, s) is a DECIMAL(38, s), an AVG, STDDEV or
        VARIANCE one with at least 6 digits of scale; an ARRAY_AGG an ARRAY and a COLLECT a
        MULTISET of the argument's type; a LISTAGG and the JSON aggregates a STRING whatever their
        argument. None wherever the argument's type cannot be told."""
        if self.result in (Result.COUNT, Result.ESTIMATE):
            return exp.DataType.build("BIGINT")
        if self.result in _TEXT_RESULTS:
            return exp.DataType.build("STRING")
        if argument is None or argument.this == exp.DataType.Type.UNKNOWN:
            return None
        if self.result in _COLLECTIONS:
            return exp.DataType(this=_COLLECTIONS[self.result], expressions=[argument.copy()], nested=True)
        if self.result not in _OWN_TYPED:
            return None
        if argument.this != exp.DataType.Type.DECIMAL or self.result not in _WIDENED:
            return argument
        scale = int(argument.expressions[1].name) if len(argument.expressions) == 2 else 0
        return exp.DataType.build(f"DECIMAL({MAX_DIGITS}, {max(scale, 6) if self.result is not Result.SUM else scale})")


def _extreme(name: str, function: Fill, result: Result) -> AggregateFunction:
    return AggregateFunction(name, {Family.EXACT: ((EXACT_EXTREME, function),),
                                    Family.INTEGER: ((INTEGER_VALUE, function),),
                                    Family.TIME: ((EXACT_EXTREME, function),),
                                    Family.FLOATING: ((FLOATING_VALUE, function),),
                                    Family.TEXT: ((TEXT_EXTREME, function),)}, result,
                             integers_as=Family.INTEGER, operands=Operands.COMPARABLE, own_type=True)


def _by_arrival(name: str, first: bool, result: Result, distinct_state: State = ()) -> AggregateFunction:
    """FIRST_VALUE (``first``) and LAST_VALUE: a number or a time kept in the type a MIN or MAX
    keeps it in, beside its earliest or latest arrival as one number (:data:`ARRIVAL_ORDER`); text,
    or a value of a type the declared columns do not make certain, kept as text with its arrival."""
    arrival, by_order = (Fill.EARLIEST_ARRIVAL, Fill.FIRST_BY_ORDER) if first else (Fill.LATEST_ARRIVAL, Fill.LAST_BY_ORDER)
    kept = {Family.EXACT: EXACT_BY_ORDER, Family.TIME: EXACT_BY_ORDER, Family.INTEGER: INTEGER_BY_ORDER,
            Family.FLOATING: FLOATING_BY_ORDER}
    as_text = (FIRST_ORDERED, Fill.FIRST_BY_ARRIVAL) if first else (LAST_ORDERED, Fill.LAST_BY_ARRIVAL)
    return AggregateFunction(name, {None: (as_text,),
                                    **{f: ((ARRIVAL_ORDER, arrival), (field, by_order)) for f, field in kept.items()}},
                             result, integers_as=Family.INTEGER, distinct=Distinct.FIRST_ARRIVALS,
                             distinct_state=distinct_state, own_type=True)


def _spread(name: str, result: Result, flink: str = "") -> AggregateFunction:
    """STDDEV and VARIANCE, as Flink reduces them: from the count, the sum and the sum of squares
    of the values; those of integers in DOUBLE, as Flink computes them, and the values and squares
    of a DECIMAL too wide for them in two sums each: exact below what Spark multiplies exactly, in
    DOUBLE past it (a DECIMAL(38, 35)'s sum passes its type's bound from 1,000 up, where Flink's
    DOUBLE goes on; slots recorded before keep the values' sum exact: ``Family.WIDE_EXACT_SUM``)."""
    wide_squares = ((EXACT_SQUARES, Fill.SUM_SMALL_SQUARES), (FLOATING_SQUARES, Fill.SUM_LARGE_SQUARES))
    return AggregateFunction(name, {Family.EXACT: ((COUNTED, Fill.COUNT), (EXACT_SUM, Fill.SUM),
                                                   (EXACT_SQUARES, Fill.SUM_SQUARES)),
                                    Family.WIDE: ((COUNTED, Fill.COUNT), (EXACT_SUM, Fill.SUM_SMALL),
                                                  (FLOATING_VALUE, Fill.SUM_LARGE), *wide_squares),
                                    Family.WIDE_EXACT_SUM: ((COUNTED, Fill.COUNT), (EXACT_SUM, Fill.SUM),
                                                            *wide_squares),
                                    Family.FLOATING: ((COUNTED, Fill.COUNT), (FLOATING_VALUE, Fill.SUM),
                                                      (FLOATING_SQUARES, Fill.SUM_SQUARES))},
                             result, flink, integers_as=Family.FLOATING, exact_digits=EXACT_SQUARE_DIGITS,
                             operands=Operands.NUMBERS)


AGGREGATES: Mapping[str, AggregateFunction] = {a.name: a for a in (
    AggregateFunction("COUNT", {None: ((COUNTED, Fill.COUNT),)}, Result.COUNT),
    AggregateFunction("SUM", {Family.EXACT: ((EXACT_SUM, Fill.SUM),), Family.INTEGER: ((INTEGER_VALUE, Fill.SUM),),
                              Family.FLOATING: ((FLOATING_VALUE, Fill.SUM),)},
                      Result.SUM, integers_as=Family.INTEGER, operands=Operands.NUMBERS, own_type=True),
    _extreme("MIN", Fill.MIN, Result.MIN),
    _extreme("MAX", Fill.MAX, Result.MAX),
    # Flink averages integers from a BIGINT sum (wrapping) and their count.
    AggregateFunction("AVG", {Family.EXACT: ((COUNTED, Fill.COUNT), (EXACT_SUM, Fill.SUM)),
                              Family.INTEGER: ((COUNTED, Fill.COUNT), (INTEGER_VALUE, Fill.SUM)),
                              Family.FLOATING: ((COUNTED, Fill.COUNT), (FLOATING_VALUE, Fill.SUM))}, Result.MEAN,
                      integers_as=Family.INTEGER, operands=Operands.NUMBERS),
    _spread("STDDEV_POP", Result.STDDEV_POP),
    _spread("STDDEV_SAMP", Result.STDDEV_SAMP),
    _spread("VARIANCE_POP", Result.VAR_POP, "VAR_POP"),
    _spread("VARIANCE", Result.VAR_SAMP, "VAR_SAMP"),
    # DISTINCT: the value that arrived first is also the first distinct one. Flink's
    # LAST_VALUE(DISTINCT) is the value whose first arrival is the latest (of 9, 3, 5, 9: 5), which
    # the latest arrival alone cannot tell: it keeps every value with its arrival.
    _by_arrival("FIRST_VALUE", True, Result.FIRST),
    _by_arrival("LAST_VALUE", False, Result.LAST, distinct_state=((ALL_ORDERED, Fill.ALL_BY_ARRIVAL),)),
    AggregateFunction("LISTAGG", {Family.TEXT: ((ALL_ORDERED, Fill.ALL_BY_ARRIVAL),)}, Result.LIST, literal=SEPARATOR,
                      distinct=Distinct.FIRST_ARRIVALS, operands=Operands.TEXT),
    AggregateFunction("ARRAY_AGG", {None: ((ALL_ORDERED, Fill.ALL_BY_ARRIVAL),)}, Result.ARRAY,
                      distinct=Distinct.FIRST_ARRIVALS, keeps_nulls=True, null_switch=IGNORE_NULLS),
    # DISTINCT: the set of its values, each counted once.
    AggregateFunction("COLLECT", {None: ((VALUE_LIST, Fill.VALUE_LIST),)}, Result.MULTISET),
    # Times and floating point are left out: Flink and Spark write them in JSON differently (a
    # DOUBLE: 0.000102 against 1.02E-4).
    AggregateFunction("JSON_ARRAYAGG", {f: ((ALL_ORDERED, Fill.ALL_BY_ARRIVAL),) for f in (Family.EXACT, Family.TEXT)},
                      Result.JSON_ARRAY, distinct=Distinct.REFUSED, null_switch=NULL_ON_NULL),
    AggregateFunction("JSON_OBJECTAGG", {f: ((KEYED_LIST, Fill.KEYED_VALUES),) for f in (Family.EXACT, Family.TEXT)},
                      Result.JSON_OBJECT, keyed=True, distinct=Distinct.REFUSED, keeps_nulls=True,
                      null_switch=ABSENT_ON_NULL),
    # VVR's: approximate by design, so DISTINCT adds nothing to it, and VVR takes none.
    AggregateFunction("APPROX_COUNT_DISTINCT", {None: ((SKETCH, Fill.SKETCH),)}, Result.ESTIMATE,
                      literal=ACCURACY, distinct=Distinct.REFUSED),
)}

#: Flink's built-in aggregate functions (and VVR's APPROX_COUNT_DISTINCT). Those sqlglot has no node
#: for are parsed as plain calls: by name, the analyzer knows them for aggregates, never user
#: functions, even over group keys (``LISTAGG(supplier_id)``).
FLINK_AGGREGATES = frozenset({
    "AVG", "COUNT", "SUM", "MIN", "MAX", "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "VARIANCE",
    "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "COLLECT", "ARRAY_AGG", "JSON_OBJECTAGG", "JSON_ARRAYAGG",
    "APPROX_COUNT_DISTINCT",
})


def reduces_means(functions: Iterable[str]) -> bool:
    """Whether Flink's planner computes the AVGs of an aggregation of ``functions`` as SUM / COUNT.
    It does where the aggregation also has a STDDEV or VARIANCE (Calcite's
    AggregateReduceFunctionsRule rewrites them all at once), and the SUM of a TINYINT, SMALLINT or
    INT is of their type: such an AVG's sum then wraps past that type's range, where AVG's own
    accumulator sums in a BIGINT (probed with PyFlink 2.3: of an INT's 91 and 2147483647 the AVG is
    1073741869 alone, -1073741779 beside a VAR_POP of any column, with DISTINCT or FILTER, on every
    window kind)."""
    return any(AGGREGATES[f].result.spread for f in functions if f in AGGREGATES)


def keeps_set(function: str, distinct: bool) -> bool:
    """Whether an aggregate keeps the set of its values (a DISTINCT one, but where :class:`Distinct`
    says otherwise)."""
    known = AGGREGATES.get(function)
    return distinct and (known is None or known.distinct is Distinct.SET)


def state_of(function: str, family: Family | None, distinct: bool, ordered_arrivals: bool = True) -> State:
    """The state an aggregate keeps: the set of its values if it keeps one (:func:`keeps_set`),
    else its table entry's (with DISTINCT, its ``distinct_state`` where it has one); without
    ``ordered_arrivals`` (a layout recorded before them), a value kept with its arrival keeps it as
    a struct (:data:`ARRIVED_BEFORE`). Raises KeyError for an aggregate the engine does not run over ``family``."""
    if keeps_set(function, distinct):
        return ((VALUES, Fill.VALUE_SET),)
    found = AGGREGATES[function].state_of(family, distinct)
    if found is None:
        raise KeyError(f"{function} over {family}")
    if not ordered_arrivals:
        return tuple((ARRIVED_BEFORE.get(field, field), how) for field, how in found)
    return found

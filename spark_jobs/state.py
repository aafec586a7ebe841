"""State layout v2: one state row per (group keys, grouping set, slice), aggregates in fixed slots.

Why not Spark's ``groupBy(keys, window).agg(sum(b), max(c))``? Its state row is positional: the
value schema is ``(sum, max)``. Adding ``count(c)`` changes that schema and the restart fails the
state-schema check; swapping two same-typed aggregates passes the check and silently continues each
from the other's state. Neither matches the verdicts: adding an aggregate is PARTIAL (restart, the
new one starts from zero) and reordering is FULL.

Here the streaming aggregation's buffer never depends on the query. It is a fixed number of
*slots*, each the same set of typed fields, and every aggregate of the query lives in the slot that
:mod:`analyzer.layout` assigned to its identity (recorded beside the checkpoint)::

    key:   k0..kn (group keys, by position), gs (grouping set), w (slice)
    value: n                                   rows of the group (shapes sessions and windows)
           c<i>                                values counted by slot i (COUNT, AVG)
           sm<i>, sd<i>                        sums: exact numbers (decimal(38,18)), floating
           lo<f><i>, hi<f><i>                  min / max per family f: m, d, s (string), t (time)
           dv<j>                               distinct slot j: the set of values, as text

A slot that holds no aggregate is fed null literals, so adding an aggregate to a free slot starts
it from zero in every open window; a dropped aggregate's slot is retired until no open window can
still hold its values (``analyzer.layout``). Group keys stay positional: changing or reordering them
is INCOMPATIBLE by the rules, and the checkpoint guard refuses those restarts.

Measured here (1M bids, 500 keys, TUMBLE 1 min, 3 aggregates, local[2]; issue #11). Spark's own
aggregation: 8,866 state rows, about 15 s of query time. This layout: the same 8,866 state rows
(layout v1, which unpivoted every row into one state row per aggregate, kept four times as many),
with a no-op sink 20.9 s with 3 slots and 21.7 s with 5 (the default for 3 aggregates); with the
parquet sink 25.9 s with 4 slots and 31.6 s with 8, where the buffer crosses Spark's 100-field
limit for generated code. What the buffer costs is its fields:
Spark plans equal aggregate expressions once, so every field is made a distinct expression
(:func:`_unique`) and each is updated for every row, where Spark's own buffer has 4 fields. (A first
sketch that fed free slots plain null literals measured no cost for width: Spark had merged them.)
Integers and decimals share the exact family (a long fits decimal(38,18)); its sums run on Java's
BigDecimal, as Spark's own decimal sums past 18 digits do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from analyzer.errors import SQLModelError
from analyzer.layout import StageLayout
from analyzer.model import Aggregate

#: The internal row count every layout keeps, whatever the query's aggregates: it says which
#: (key, window) groups exist and shapes sessions. It is not the user's COUNT(*), which has a slot
#: of its own and so starts from zero when it is added, as the PARTIAL verdict promises.
ROWS = "n"

#: Value families of a slot: one typed field per family keeps the schema fixed.
FAMILIES: dict[str, T.DataType] = {
    "m": T.DecimalType(38, 18),
    "d": T.DoubleType(),
    "s": T.StringType(),
    "t": T.TimestampType(),
}
SUMMABLE = ("m", "d")
SUPPORTED = ("COUNT", "SUM", "MIN", "MAX", "AVG")


def family_of(data_type: T.DataType, function: str) -> str:
    if function == "COUNT":
        return "m"  # only the count is kept
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType,
                              T.DecimalType)):
        return "m"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "d"
    if function in ("MIN", "MAX"):
        if isinstance(data_type, T.StringType):
            return "s"
        if isinstance(data_type, (T.TimestampType, T.TimestampNTZType, T.DateType)):
            return "t"
    raise SQLModelError(f"{function} over a {data_type.simpleString()} value is not supported")


@dataclass(frozen=True)
class Slot:
    """One aggregate of the query, placed in the buffer."""

    aggregate: Aggregate
    index: int  # slot number in its pool (plain or distinct)
    value: str | None  # input column holding the aggregate's argument; None for COUNT(*)
    family: str
    input_type: T.DataType
    filter: str | None = None  # input column holding its FILTER (WHERE ...) predicate

    @property
    def function(self) -> str:
        return self.aggregate.function

    @property
    def distinct(self) -> bool:
        return self.aggregate.distinct


def _plain_fields(i: int) -> list[str]:
    return [f"c{i}", *(f"s{f}{i}" for f in SUMMABLE), *(f"{op}{f}{i}" for f in FAMILIES for op in ("lo", "hi"))]


def buffer_fields(layout: StageLayout) -> list[str]:
    """The buffer's columns, in schema order: fixed by the layout's widths alone."""
    fields = [ROWS, *(c for i in range(layout.plain.width) for c in _plain_fields(i))]
    return fields + [f"dv{j}" for j in range(layout.distinct.width)]


def explode_grouping_sets(df, keys: Sequence[str], grouping_sets: Sequence[Sequence[int]] | None,
                          carry: Sequence[str]):
    """One row per (input row, grouping set): ``gs`` numbers the set, keys outside it are null."""
    if grouping_sets is None:
        return df.select(*carry, *keys, F.lit(0).alias("gs"))
    key_structs = F.array(*[
        F.struct(F.lit(index).alias("gs"), *[
            (F.col(k) if i in members else F.lit(None).cast(df.schema[k].dataType)).alias(k)
            for i, k in enumerate(keys)
        ])
        for index, members in enumerate(grouping_sets)
    ])
    return df.select(*carry, F.explode(key_structs).alias("_k")) \
        .select(*carry, *[F.col(f"_k.{k}").alias(k) for k in keys], F.col("_k.gs").alias("gs"))


def accumulate(layout: StageLayout, slots: Sequence[Slot], ts: str) -> list[Column]:
    """Stage 1: the buffer of one slice, from input rows. Slots without an aggregate read nulls.

    Spark plans equal aggregate expressions once: two free slots (both ``min(NULL)``), or SUM and
    AVG of one column, would share a buffer field, and the buffer's schema would then depend on the
    assignment. So each field's input is made unique (:func:`_unique`)."""
    plain = {s.index: s for s in slots if not s.distinct}
    distinct = {s.index: s for s in slots if s.distinct}
    columns = [F.count(F.lit(1)).alias(ROWS)]
    field = iter(range(1, 1 << 30))
    for i in range(layout.plain.width):
        slot = plain.get(i)
        counted = _counted(slot) if slot else None
        one = F.when(counted, F.lit(1)) if slot else None
        columns.append(F.count(_unique(ts, next(field), T.IntegerType(), one)).alias(f"c{i}"))
        for family in SUMMABLE:
            wanted = slot is not None and slot.function in ("SUM", "AVG") and slot.family == family
            value = _unique(ts, next(field), FAMILIES[family], _input(slot, counted, family, wanted))
            columns.append(F.sum(value).alias(f"s{family}{i}"))
        for family in FAMILIES:
            for op, fn in (("lo", F.min), ("hi", F.max)):
                wanted = slot is not None and slot.family == family and \
                    slot.function == ("MIN" if op == "lo" else "MAX")
                value = _unique(ts, next(field), FAMILIES[family], _input(slot, counted, family, wanted))
                columns.append(fn(value).alias(f"{op}{family}{i}"))
    for j in range(layout.distinct.width):
        slot = distinct.get(j)
        value = F.when(_counted(slot), F.col(slot.value).cast("string")) if slot and slot.value else None
        columns.append(F.collect_set(_unique(ts, next(field), T.StringType(), value)).alias(f"dv{j}"))
    return columns


#: No record has this event time: the instant before which :func:`_unique` tags its fields.
_NEVER = datetime(1, 1, 1)
_NEVER_VALUES = {T.IntegerType(): 0, T.DecimalType(38, 18): 0, T.DoubleType(): 0.0, T.StringType(): "",
                 T.TimestampType(): _NEVER}


def _unique(ts: str, tag: int, data_type: T.DataType, value: Column | None) -> Column:
    """``value`` (None: no value, a null), written so that no two buffer fields are equal
    expressions, with a branch that never fires (event time equal to year 1 plus ``tag``
    microseconds) and that the optimizer cannot fold. The result stays nullable: Spark turns a
    count of a never-null expression into ``count(1)``, which would merge with the row count."""
    never = F.col(ts) == F.lit(_NEVER + timedelta(microseconds=tag))
    if value is None:
        return F.when(never, F.lit(_NEVER_VALUES[data_type]).cast(data_type))
    return F.when(never, F.lit(None).cast(data_type)).otherwise(value)


def _counted(slot: Slot) -> Column:
    value = F.lit(1) if slot.value is None else F.col(slot.value)
    # A FILTERed-out row still counts in ROWS, so it shapes sessions and window existence.
    passes = F.lit(True) if slot.filter is None else F.coalesce(F.col(slot.filter), F.lit(False))
    return passes & value.isNotNull()


def _input(slot: Slot | None, counted: Column | None, family: str, wanted: bool) -> Column | None:
    """What a field of the slot reads: None where the slot's aggregate does not use it."""
    if not wanted or slot is None or slot.value is None:
        return None
    return F.when(counted, F.col(slot.value).cast(FAMILIES[family]))


def combine(slots: Sequence[Slot]) -> list[Column]:
    """Stage 2: a window's values, from the buffers of its slices: only the fields the query's
    aggregates read (a window is emitted once, so its row needs no fixed schema)."""
    columns = [F.sum(ROWS).alias(ROWS)]
    for slot in slots:
        columns += [combined(name) for name in fields_of(slot)]
    return columns


def fields_of(slot: Slot) -> list[str]:
    """The buffer fields an aggregate reads."""
    i, family = slot.index, slot.family
    if slot.distinct:
        return [f"dv{i}"]
    if slot.function == "COUNT":
        return [f"c{i}"]
    if slot.function == "SUM":
        return [f"s{family}{i}"]
    if slot.function == "AVG":
        return [f"c{i}", f"s{family}{i}"]
    return [f"{'lo' if slot.function == 'MIN' else 'hi'}{family}{i}"]


def combined(name: str) -> Column:
    """A field of several buffers merged into one, by what the field holds."""
    if name.startswith("dv"):
        return F.array_distinct(F.flatten(F.collect_list(name))).alias(name)
    if name.startswith("lo"):
        return F.min(name).alias(name)
    if name.startswith("hi"):
        return F.max(name).alias(name)
    return F.sum(name).alias(name)


def final_value(slot: Slot) -> Column:
    """The aggregate's result for an emitted window, from its slot, typed as Flink types it."""
    function, family = slot.function, slot.family
    if slot.distinct:
        values = F.transform(F.col(f"dv{slot.index}"), lambda x: x.cast(_value_type(slot)))
        if function == "COUNT":
            return F.size(F.col(f"dv{slot.index}")).cast("long")
        value_type = _value_type(slot)
        total = F.aggregate(values, F.lit(None).cast(value_type),
                            lambda acc, x: F.coalesce(acc + x, x).cast(value_type))
        if function == "SUM":
            return _cast(total, slot)
        if function == "AVG":
            return _cast(total / F.size(values), slot)
        return _cast(F.array_min(values) if function == "MIN" else F.array_max(values), slot)
    i = slot.index
    if function == "COUNT":
        return F.coalesce(F.col(f"c{i}"), F.lit(0)).cast("long")
    if function == "SUM":
        return _cast(F.col(f"s{family}{i}"), slot)
    if function == "AVG":
        return _cast(F.col(f"s{family}{i}") / F.col(f"c{i}"), slot)
    return _cast(F.col(f"{'lo' if function == 'MIN' else 'hi'}{family}{i}"), slot)


def _value_type(slot: Slot) -> T.DataType:
    return FAMILIES[slot.family] if slot.family in SUMMABLE else slot.input_type


def _cast(value: Column, slot: Slot) -> Column:
    """Back to the type Flink gives the result: decimals widen to 38 digits and keep their scale
    (AVG keeps at least 6); other types are the input's (AVG of an INT is an INT, as in Flink)."""
    data_type = slot.input_type
    if isinstance(data_type, T.DecimalType):
        scale = max(data_type.scale, 6) if slot.function == "AVG" else data_type.scale
        return value.cast(T.DecimalType(38, scale))
    return value.cast(data_type)


def check_supported(aggregate: Aggregate) -> None:
    if aggregate.user_defined:
        raise SQLModelError(f"user-defined aggregate {aggregate.written} cannot run on Spark here")
    if aggregate.function not in SUPPORTED:
        raise SQLModelError(
            f"aggregate {aggregate.written} is not supported (supported: {', '.join(SUPPORTED)})")
    if len(aggregate.args) > 1:
        raise SQLModelError(f"aggregate {aggregate.written} takes one argument")

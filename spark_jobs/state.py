"""State layout: aggregates stored under their identity, in one fixed buffer, inside Spark's own
streaming aggregation.

Why not Spark's ``groupBy(keys, window).agg(sum(b), max(c))``? Its state row is positional: the
value schema is ``(sum, max)``. Adding ``count(c)`` changes that schema and the restart fails the
state-schema check; swapping two same-typed aggregates passes the check and silently continues each
from the other's state. Neither matches the verdicts: adding an aggregate is PARTIAL (restart, the
new one starts from zero) and reordering is FULL.

The layout here unpivots every input row into one row per aggregate, keyed by the aggregate's
*identity* (``SUM(Bid.price)``: function, DISTINCT, resolved input, FILTER - from the analyzer), and
aggregates a buffer whose schema never depends on the query::

    key:   k0..kn (group keys, by position), gs (grouping set), w (slice/window), agg, dv
    value: n, sum_l, sum_d, sum_m, min_l, max_l, min_d, max_d, min_m, max_m, min_s, max_s, min_t, max_t

* adding an aggregate adds rows under a new ``agg`` key: they start from zero, the others continue;
* deleting one stops its rows; its leftover state is ignored when windows are emitted, then evicted;
* reordering changes nothing stored; the SELECT order is applied when a window is emitted;
* ``dv`` carries the value of a DISTINCT aggregate (as text) so that duplicates collapse in the key.

Measured on this machine before choosing (2M rows, 1000 keys, local[2]; issue #3): Spark's own
1-minute tumble 28 s, this unpivoted fixed buffer 29 s, per-key Python state
(``transformWithStateInPandas``) 267 s. Native aggregation keyed by a stable identity keeps near
native speed; Python state costs about 9x. The price is paid in rows: a query with A aggregates keeps
A + 1 state rows per group (the +1 is the internal row count, :data:`ROWS`), each updating the whole
buffer. ``benchmarks/window_bench.py`` measures it beside Spark's built-in windows (both engines warmed
up, best of alternating runs; 150k bids, 100 keys, 3 aggregates): TUMBLE 1 min runs at 0.59x of
Spark's own, HOP, CUMULATE and SESSION at 0.45x-0.56x. The cost is the row count, not the buffer's
width: a 9-column buffer measured the same. Slicing wins the HOP fan-out back where slices are dense
(HOP 60 min / 1 min, 1M bids over 20 keys: 0.98x).

Group keys stay positional: changing or reordering them is INCOMPATIBLE by the rules, and the
checkpoint guard refuses those restarts (same-typed swaps would otherwise pass Spark's check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from analyzer.errors import SQLModelError
from analyzer.model import Aggregate

#: The internal row count every layout keeps, whatever the query's aggregates: it says which
#: (key, window) groups exist and shapes sessions. It is not the user's COUNT(*), which has its own
#: identity and so starts from zero when it is added, as the PARTIAL verdict promises.
ROWS = "__rows__"

#: Value families of the buffer: one typed slot per family keeps the schema fixed.
FAMILIES: dict[str, T.DataType] = {
    "l": T.LongType(),
    "d": T.DoubleType(),
    "m": T.DecimalType(38, 18),
    "s": T.StringType(),
    "t": T.TimestampType(),
}
SUMMABLE = ("l", "d", "m")
BUFFER = ["n", *(f"sum_{f}" for f in SUMMABLE), *(f"{op}_{f}" for f in FAMILIES for op in ("min", "max"))]
SUPPORTED = ("COUNT", "SUM", "MIN", "MAX", "AVG")


def family_of(data_type: T.DataType, function: str) -> str:
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType)):
        return "l"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "d"
    if isinstance(data_type, T.DecimalType):
        return "m"
    if function in ("MIN", "MAX", "COUNT"):
        if isinstance(data_type, T.StringType):
            return "s"
        if isinstance(data_type, (T.TimestampType, T.TimestampNTZType, T.DateType)):
            return "t"
    raise SQLModelError(f"{function} over a {data_type.simpleString()} value is not supported")


@dataclass(frozen=True)
class Slot:
    """One aggregate of the query, placed in the fixed buffer."""

    aggregate: Aggregate
    value: str | None  # input column holding the aggregate's argument; None for COUNT(*)
    family: str
    input_type: T.DataType
    filter: str | None = None  # input column holding its FILTER (WHERE ...) predicate
    relevant: str | None = None  # input column: does this row feed the aggregate (cascades)

    @property
    def identity(self) -> str:
        return ROWS if self.aggregate.function == ROWS else self.aggregate.identity

    @property
    def function(self) -> str:
        return self.aggregate.function


def unpivot(df: DataFrame, keys: Sequence[str], slots: Sequence[Slot],
            grouping_sets: Sequence[Sequence[int]] | None, carry: Sequence[str]) -> DataFrame:
    """One row per (input row, grouping set, aggregate): ``k*, gs, agg, dv, c, v_*`` plus ``carry``."""
    if grouping_sets is None:
        # One grouping set: no fan-out on the keys, the same layout (gs = 0).
        keyed = df.select(*carry, *keys, F.lit(0).alias("gs"), _agg_array(slots))
    else:
        key_structs = F.array(*[
            F.struct(F.lit(index).alias("gs"), *[
                (F.col(k) if i in members else F.lit(None).cast(df.schema[k].dataType)).alias(k)
                for i, k in enumerate(keys)
            ])
            for index, members in enumerate(grouping_sets)
        ])
        keyed = df.select(*carry, F.explode(key_structs).alias("_k"), _agg_array(slots)) \
            .select(*carry, *[F.col(f"_k.{k}").alias(k) for k in keys], F.col("_k.gs").alias("gs"), "_aggs")
    exploded = keyed.select(*carry, *keys, "gs", F.explode("_aggs").alias("_a"))
    if any(slot.relevant for slot in slots):
        exploded = exploded.where(F.col("_a.relevant"))
    return exploded.select(*carry, *keys, "gs",
                           *[F.col(f"_a.{c}").alias(c) for c in ("agg", "dv", "c", *[f"v_{f}" for f in FAMILIES])])


def _agg_array(slots: Sequence[Slot]) -> Column:
    return F.array(*[_agg_struct(slot) for slot in slots]).alias("_aggs")


def _agg_struct(slot: Slot) -> Column:
    value = F.lit(1) if slot.value is None else F.col(slot.value)
    relevant = F.lit(True) if slot.relevant is None else F.col(slot.relevant)
    # A FILTERed-out row stays (with no value) so it still shapes sessions and window existence.
    passes = F.lit(True) if slot.filter is None else F.coalesce(F.col(slot.filter), F.lit(False))
    counted = passes & value.isNotNull()
    fields = [
        F.lit(slot.identity).alias("agg"),
        (F.when(counted, value.cast("string")) if slot.aggregate.distinct else F.lit(None).cast("string")).alias("dv"),
        F.when(counted, F.lit(1)).otherwise(F.lit(0)).cast("long").alias("c"),
    ]
    for family, data_type in FAMILIES.items():
        v = F.when(counted, value.cast(data_type)) if family == slot.family and slot.value is not None else None
        fields.append((v if v is not None else F.lit(None).cast(data_type)).alias(f"v_{family}"))
    fields.append(relevant.alias("relevant"))
    return F.struct(*fields)


def accumulate() -> list[Column]:
    """Stage 1: the buffer of one slice, from unpivoted rows."""
    columns = [F.sum("c").alias("n")]
    columns += [F.sum(f"v_{f}").alias(f"sum_{f}") for f in SUMMABLE]
    for family in FAMILIES:
        columns += [F.min(f"v_{family}").alias(f"min_{family}"), F.max(f"v_{family}").alias(f"max_{family}")]
    return columns


def combine(condition: Column | None = None) -> list[Column]:
    """Stage 2: the buffer of a window, from the buffers of its slices (optionally only some)."""
    def part(name: str) -> Column:
        return F.col(name) if condition is None else F.when(condition, F.col(name))

    columns = [F.sum(part("n")).alias("n")]
    columns += [F.sum(part(f"sum_{f}")).alias(f"sum_{f}") for f in SUMMABLE]
    for family in FAMILIES:
        columns += [F.min(part(f"min_{family}")).alias(f"min_{family}"),
                    F.max(part(f"max_{family}")).alias(f"max_{family}")]
    return columns


def pivot_columns(slots: Sequence[Slot]) -> list[Column]:
    """Per emitted window: each aggregate's final value, gathered from its rows (one per DISTINCT value)."""
    columns = [F.max(F.when(F.col("agg") == ROWS, F.col("n"))).alias("_rows")]
    for index, slot in enumerate(slots):
        if slot.identity == ROWS:
            continue
        mine = (F.col("agg") == slot.identity) & (F.coalesce(F.col("n"), F.lit(0)) > 0)
        columns.append(_final(slot, mine).alias(f"a{index}"))
    return columns


def row_value(slot: Slot) -> Column:
    """The final value of a non-distinct aggregate from its own buffer row (cascaded windows)."""
    f, function = slot.family, slot.function
    mine = F.col("agg") == slot.identity
    if function == "COUNT":
        value = F.col("n")
    elif function == "AVG":
        value = F.col(f"sum_{f}") / F.col("n")
    elif function == "SUM":
        value = F.col(f"sum_{f}")
    else:
        value = F.col(f"{function.lower()}_{f}")
    return F.when(mine, value if function == "COUNT" else _cast(value, slot))


def _final(slot: Slot, mine: Column) -> Column:
    f, function = slot.family, slot.function
    if slot.aggregate.distinct:
        values = F.when(mine, F.col(f"min_{f}"))
        if function == "COUNT":
            return F.count(F.when(mine, F.col("dv")))
        if function == "SUM":
            return _cast(F.sum(values), slot)
        if function == "AVG":
            return _cast(F.sum(values) / F.count(values), slot)
        return _cast((F.min if function == "MIN" else F.max)(values), slot)
    if function == "COUNT":
        return F.coalesce(F.max(F.when(mine, F.col("n"))), F.lit(0)).cast("long")
    if function == "SUM":
        return _cast(F.max(F.when(mine, F.col(f"sum_{f}"))), slot)
    if function == "AVG":
        return _cast(F.max(F.when(mine, F.col(f"sum_{f}") / F.col("n"))), slot)
    return _cast(F.max(F.when(mine, F.col(f"{function.lower()}_{f}"))), slot)


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

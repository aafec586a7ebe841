"""Window joins on Spark: window aggregations joined on their windows, per micro-batch.

Flink's window join (``analyzer.model.WindowJoin``) emits the joined rows of a window once, when
the watermark passes the window's end, and keeps no row after that. Here every input (*branch*)
of the join is a window aggregation of one streaming query. Spark keeps one watermark per query
(the minimum of its sources'), so the micro-batch in which one branch emits the windows ending
before it is the micro-batch in which every other branch emits the same windows: a join of the
rows that one micro-batch emits is the complete join of those windows. Unmatched rows of an outer
join are known in the same micro-batch, so LEFT, RIGHT and FULL joins emit them at once, as Flink
does. An aggregation grouped by the window attributes of the windows it reads (Nexmark q5's
maximum count per window) is complete in that micro-batch too, so it is evaluated there, with no
state of its own.

Why not Spark's own stream-stream join over the branches' streams: it keeps every emitted window of
both inputs as join state until the watermark passes a time-range condition, writes that state at
every micro-batch and evicts it a batch later, and its outer joins emit unmatched rows only then;
here the windows are already complete when they are joined, and the join keeps nothing. What it
costs is one cache of the micro-batch's closed windows (every branch reads the batch; read twice
without the cache, Spark would run the stateful aggregation twice).

The branches share the query's checkpoint: one state store per stateful operator, and for
assembled windows (HOP, CUMULATE) one directory of retained slices per branch.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterator, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from stategate.analyzer.model import WINDOW_FIELDS, WindowAggregate, WindowJoin, branch_column, sql_key
from stategate.spark_jobs.assembly import WindowAssembler
from stategate.spark_jobs.expressions import to_column

#: The column of the joined stream saying which branch a row comes from.
BRANCH = "_branch"
_HOW = {"INNER": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}


@dataclass(frozen=True)
class Branch:
    """One input of a window join, compiled."""

    alias: str
    stream: DataFrame  # its window aggregation's closed windows (or slices, when assembled)
    assembler: WindowAssembler | None
    rows: Callable[[DataFrame], DataFrame]  # closed windows → the branch's rows, named as its SELECT names them


def per_window(aggregate: WindowAggregate) -> bool:
    """Whether ``aggregate`` aggregates closed windows grouped by their window_start and window_end,
    so every group is complete in the micro-batch that closes its windows."""
    if aggregate.window is not None or not isinstance(aggregate.source, WindowAggregate):
        return False
    fields = {k.window_field for k in aggregate.group_keys}
    return {"window_start", "window_end"} <= fields and set(fields) - {None} <= set(WINDOW_FIELDS)


def joined_stream(branches: Sequence[Branch]) -> DataFrame:
    """Every branch's stream as one: ``BRANCH`` says whose row it is, a struct per branch holds it."""
    packed = [b.stream.select(F.lit(i).alias(BRANCH), F.struct("*").alias(_struct(i))) for i, b in enumerate(branches)]
    return reduce(lambda left, right: left.unionByName(right, allowMissingColumns=True), packed)


def join_finalizer(join: WindowJoin, branches: Sequence[Branch], sink_types: Sequence[tuple[str, str]]):
    """A micro-batch of :func:`joined_stream` → the join's rows (``compile.Finalize``)."""
    names: dict[str, str] = {}
    renamed: list[list[str]] = []
    for i, branch in enumerate(branches):
        columns = [o.name for o in join.branches[i].aggregate.outputs]
        renamed.append([f"_j{i}_{n}" for n in range(len(columns))])
        names.update({sql_key(branch_column(branch.alias, c)): r for c, r in zip(columns, renamed[-1])})
    conditions = [to_column(c.expr, names) for c in join.conditions]
    filters = [to_column(f.expr, names) for f in join.filters]
    outputs = [to_column(o.value.expr, names).alias(o.name) for o in join.outputs]
    if sink_types:
        outputs = [column.cast(data_type).alias(target) for column, (target, data_type) in zip(outputs, sink_types)]

    @contextmanager
    def finalize(batch: DataFrame, batch_id: int, analyse: bool = False) -> Iterator[DataFrame]:
        if not analyse:
            batch = batch.persist()
        try:
            with ExitStack() as assembled:
                frames = []
                for i, branch in enumerate(branches):
                    windows = batch.where(F.col(BRANCH) == i).select(f"{_struct(i)}.*")
                    if branch.assembler is not None and not analyse:
                        windows = assembled.enter_context(branch.assembler(windows, batch_id))
                    rows = branch.rows(windows)
                    frames.append(rows.select(*[F.col(c).alias(r) for c, r in zip(rows.columns, renamed[i])]))
                joined = frames[0]
                for frame, kind, condition in zip(frames[1:], join.kinds, conditions):
                    joined = joined.join(frame, condition, _HOW[kind])
                for predicate in filters:
                    joined = joined.where(predicate)
                yield joined.select(*outputs)
        finally:
            if not analyse:
                batch.unpersist()

    return finalize


def _struct(index: int) -> str:
    return f"_b{index}"

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

The windows are complete when they are joined, and the join keeps nothing of its own; what it
costs is one cache of the micro-batch's closed windows (every branch reads the batch; read twice
without the cache, Spark would run the stateful aggregation twice). Spark's own stream-stream join
of the aggregations lost pairs of windows when measured (docs: benchmarks).

The branches share the query's checkpoint: one state store per stateful operator, and for
assembled windows (HOP, CUMULATE) one directory of retained slices per branch.

An interval join (``analyzer.model.IntervalJoin``, Nexmark q7: bids joined with the maximum price
of the window around them) joins a stream's rows with a window aggregation's rows on a range of
the stream's event time around a window attribute. Flink runs it as a join that emits a pair when
both rows are present. Here a micro-batch joins the windows it closes with the stream's rows
retained from earlier micro-batches and its own, and the windows retained from earlier
micro-batches with its own rows: each pair once, in the micro-batch where its later row arrives.
Retained is what can still meet a row to come, as the watermark ``W`` tells it: a stream row while
a window not yet closed (ending after ``W``) can hold it in range, a window while its range reaches
``W`` (a later row is at or after ``W``: a row behind the watermark of its micro-batch is dropped as
late, as Spark's stateful operators drop them, and counted in a warning of ``stategate.late_rows``).
Like the retained slices, the retained rows and windows are one snapshot per micro-batch beside
the checkpoint (``stategate-join/rows/<N>``, ``stategate-join/windows/<N>``;
``assembly.BatchSnapshots``), so a replayed micro-batch joins the same rows. Over HOP or CUMULATE
windows, the windows a micro-batch closes are read twice (for the snapshot and for the pairs), so
they are combined from the cached slices twice (caching them instead cost as much as it saved).
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterator, Sequence

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from stategate.analyzer.model import IntervalJoin, JoinKind, Output, WindowJoin, branch_column, sql_key
from stategate.analyzer.value_types import Typing
from stategate.spark_jobs.assembly import BatchSnapshots, WindowAssembler
from stategate.spark_jobs.checkpoint import QueryLog
from stategate.spark_jobs.expressions import to_column
from stategate.spark_jobs.late_rows import log
from stategate.spark_jobs.storage import HadoopStorage

#: The column of the joined stream saying which branch a row comes from.
BRANCH = "_branch"
#: Beside a query's checkpoint files: an interval join's retained rows and windows, one snapshot per micro-batch.
JOIN_DIR = "stategate-join"
_HOW = {JoinKind.INNER: "inner", JoinKind.LEFT: "left", JoinKind.RIGHT: "right", JoinKind.FULL: "full"}


@dataclass(frozen=True)
class Branch:
    """One input of a join, compiled."""

    alias: str
    stream: DataFrame  # a window aggregation's closed windows (or slices, when assembled), or a stream's rows
    assembler: WindowAssembler | None
    rows: Callable[[DataFrame], DataFrame]  # closed windows → the branch's rows, named as its SELECT names them


def joined_stream(branches: Sequence[Branch]) -> DataFrame:
    """Every branch's stream as one: ``BRANCH`` says whose row it is, a struct per branch holds it."""
    packed = [b.stream.select(F.lit(i).alias(BRANCH), F.struct("*").alias(_struct(i))) for i, b in enumerate(branches)]
    return reduce(lambda left, right: left.unionByName(right, allowMissingColumns=True), packed)


class _Columns:
    """The branches' columns under names unique in the joined rows (``_j<branch>_<n>``), and the
    model's branch columns (``analyzer.model.branch_column``) mapped to them."""

    def __init__(self, branches: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.renamed = [[f"_j{i}_{n}" for n in range(len(columns))] for i, (_, columns) in enumerate(branches)]
        self.names = {sql_key(branch_column(alias, c)): r
                      for (alias, columns), renamed in zip(branches, self.renamed) for c, r in zip(columns, renamed)}

    def of(self, index: int, rows: DataFrame) -> DataFrame:
        return rows.select(*[F.col(c).alias(r) for c, r in zip(rows.columns, self.renamed[index])])

    def outputs(self, outputs: Sequence[Output], sink_types: Sequence[tuple[str, str]], typing: Typing) -> list[Column]:
        columns = [to_column(o.value.expr, self.names, typing, o.name) for o in outputs]
        return [c.cast(data_type).alias(target) for c, (target, data_type) in zip(columns, sink_types)] \
            if sink_types else columns


def join_finalizer(join: WindowJoin, branches: Sequence[Branch], sink_types: Sequence[tuple[str, str]], typing: Typing):
    """A micro-batch of :func:`joined_stream` → the join's rows (``compile.Finalize``); ``typing``
    types the branches' columns."""
    columns = _Columns([(b.alias, [o.name for o in b.aggregate.outputs]) for b in join.branches])
    conditions = [to_column(c.expr, columns.names, typing) for c in join.conditions]
    filters = [to_column(f.expr, columns.names, typing) for f in join.filters]
    outputs = columns.outputs(join.outputs, sink_types, typing)

    @contextmanager
    def finalize(batch: DataFrame, batch_id: int, analyse: bool = False) -> Iterator[DataFrame]:
        if not analyse:
            batch = batch.persist()
        try:
            with ExitStack() as assembled:
                frames = []
                for i, branch in enumerate(branches):
                    windows = batch.where(F.col(BRANCH) == i).select(f"{_struct(i)}.*")
                    if branch.assembler is not None:
                        windows = branch.assembler.shaped(windows) if analyse else \
                            assembled.enter_context(branch.assembler(windows, batch_id))
                    frames.append(columns.of(i, branch.rows(windows)))
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


def interval_finalizer(join: IntervalJoin, branches: Sequence[Branch], location: str, reach_ms: int,
                       sink_types: Sequence[tuple[str, str]], typing: Typing):
    """A micro-batch of :func:`joined_stream` (the stream's rows, then the window's) → the interval
    join's rows (``compile.Finalize``). ``reach_ms``: how far after its bound column a window may end."""
    stream, window = branches
    columns = _Columns([(join.stream.alias, [c.name for c in join.stream.columns]),
                        (join.window.alias, [o.name for o in join.window.aggregate.outputs])])
    condition = to_column(join.condition.expr, columns.names, typing)
    outputs = columns.outputs(join.outputs, sink_types, typing)
    time = F.col(columns.names[sql_key(branch_column(join.stream.alias, join.time))])
    bound = F.col(columns.names[sql_key(branch_column(join.window.alias, join.bound))])

    def pairs(windows: DataFrame, rows: DataFrame) -> DataFrame:
        return windows.join(rows, condition).select(*outputs)

    @contextmanager
    def finalize(batch: DataFrame, batch_id: int, analyse: bool = False) -> Iterator[DataFrame]:
        rows = columns.of(0, stream.rows(batch.where(F.col(BRANCH) == 0).select(f"{_struct(0)}.*")))
        closed = batch.where(F.col(BRANCH) == 1).select(f"{_struct(1)}.*")
        if analyse:
            shaped = window.assembler.shaped(closed) if window.assembler is not None else closed
            yield pairs(columns.of(1, window.rows(shaped)), rows)
            return
        storage = HadoopStorage(batch.sparkSession)
        query = QueryLog(storage, location)
        low, high = query.watermark(batch_id - 1), query.watermark(batch_id)
        kept_rows = BatchSnapshots(storage, location, f"{JOIN_DIR}/rows")
        kept_windows = BatchSnapshots(storage, location, f"{JOIN_DIR}/windows")
        batch = batch.persist()
        try:
            with ExitStack() as assembled:
                if window.assembler is not None:
                    closed = assembled.enter_context(window.assembler(closed, batch_id))
                windows = columns.of(1, window.rows(closed))
                late = Observation()
                if low is not None:
                    behind = time < F.timestamp_millis(F.lit(low))
                    rows = rows.observe(late, F.count(F.when(behind, 1)).alias("rows")).where(~behind)
                old_rows, old_windows = kept_rows.previous(batch_id, rows.schema), kept_windows.previous(
                    batch_id, windows.schema)
                old_rows = rows.limit(0) if old_rows is None else old_rows
                old_windows = windows.limit(0) if old_windows is None else old_windows
                all_rows, all_windows = old_rows.unionByName(rows), old_windows.unionByName(windows)
                if high is not None:
                    all_rows = all_rows.where(time > F.timestamp_millis(F.lit(high - join.lower_ms - reach_ms)))
                    all_windows = all_windows.where(bound >= F.timestamp_millis(F.lit(high - join.upper_ms)))
                kept_rows.write(batch_id, all_rows)
                kept_windows.write(batch_id, all_windows)
                if low is not None and late.get["rows"]:
                    log.warning("interval join of %s: micro-batch %d dropped %d late row(s), behind the watermark "
                                "its windows closed at", join.stream.alias, batch_id, late.get["rows"])
                yield pairs(windows, old_rows.unionByName(rows)).unionByName(pairs(old_windows, rows))
        finally:
            batch.unpersist()
        kept_rows.drop_before(batch_id)
        kept_windows.drop_before(batch_id)

    return finalize


def _struct(index: int) -> str:
    return f"_b{index}"

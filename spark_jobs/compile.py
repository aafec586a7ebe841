"""Job model → Spark Structured Streaming plan, one streaming query per pipeline.

The plan of a window aggregation, stage by stage::

    source ─ watermark ─ row filters ─ project keys / aggregate inputs
          ─ grouping sets (one row per set; spark_jobs.state)
          ─ stage 1: slice aggregation into the slot buffer (native streaming aggregation, append)
          ─ each aggregate's value from its slot, SELECT list, sink types, beside every column
            of stage 1, where nothing needs the micro-batch itself (:func:`_query`)
          ─ foreachBatch: stage 2, windows from retained slices (HOP, CUMULATE; spark_jobs.assembly)
                          each aggregate's value from its slot, Top-N, SELECT list, sink types

A window is one row holding every aggregate, so the Top-N needs no state and the SELECT list can
change freely between restarts: stage 1's state keeps every field of the layout whatever the
SELECT list reads (:func:`_query` says how; the docs' benchmarks page what it saves). Which slot holds which
aggregate comes from the layout the checkpoint guard judged (``analyzer.judgement``). What the engine
runs is checked first, from the model (``analyzer.runnable``). A window join runs each of its
window aggregations as a stage of one query and joins the windows each micro-batch closes; an
interval join runs its stream beside its window aggregation and joins them per micro-batch
(:mod:`spark_jobs.joins`).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, ContextManager, Iterator, Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window as SparkWindow
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from stategate.analyzer.aggregates import AGGREGATES, Result, keeps_set, reduces_means, state_of
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.layout import JobLayout, StageLayout, value_of
from stategate.analyzer.model import (RANK_MARKER, WINDOW_FIELDS, Aggregate, IntervalJoin, JobModel, OrderKey, Output,
                                      Pipeline, Resolved, Table, TimeKind, TopN, Window, WindowAggregate, WindowJoin,
                                      WindowOperator, branch_column, sql_key)
from stategate.analyzer.windows import Session
from stategate.analyzer.runnable import check_pipeline, declared, sink_types
from stategate.analyzer.nullability import never_null
from stategate.analyzer.scope import source_column, time_attribute, window_column, window_field_of
from stategate.analyzer.families import Family
from stategate.analyzer.value_types import Typing
from stategate.spark_jobs import state
from stategate.spark_jobs.assembly import SLICES_DIR, WindowAssembler, slices_dir
from stategate.spark_jobs.connectors import read_stream
from stategate.spark_jobs.cutover import Cutover
from stategate.spark_jobs.expressions import key_read, quoted, results_typing, to_column, whole_windows_aggregate
from stategate.spark_jobs.joins import Branch, interval_finalizer, join_finalizer, joined_stream
from stategate.spark_jobs.proctime import PROCTIME, is_record, with_processing_time
from stategate.spark_jobs.reseed import read_carried
from stategate.spark_jobs.slicing import WINDOW_TIME_LATE_US, SharedSlices, WindowSlicer, slicer_for
from stategate.spark_jobs.state import Slot
from stategate.spark_jobs.takeover import source_filter

KEY = "k{}"


@dataclass(frozen=True)
class Stage:
    """A compiled window aggregation: its stream of closed windows and how to read it."""

    aggregate: WindowAggregate
    stream: DataFrame  # k*, gs, w, buffer: closed windows, or closed slices when assembled
    keys: list[str]
    slots: list[Slot]
    slicer: WindowSlicer
    assembler: WindowAssembler | None  # stage 2, per micro-batch (HOP, CUMULATE)
    results: Typing  # what types its keys and aggregates' results, where they are read


#: A micro-batch of a pipeline's stream and its id → its sink rows, readable inside the ``with``
#: block (assembled windows keep the batch's slices cached until then). With ``analyse``, the plan
#: only, over the stream itself (assembled windows have their slices' columns): nothing runs.
Finalize = Callable[..., ContextManager[DataFrame]]


@dataclass(frozen=True)
class CompiledPipeline:
    pipeline: Pipeline
    stream: DataFrame
    finalize: Finalize
    sink: Table | None


def compile_pipeline(spark: SparkSession, model: JobModel, pipeline: Pipeline,
                     layout: JobLayout, location: str, cutover: Cutover | None = None) -> CompiledPipeline:
    """The pipeline's streaming query plan; ``location`` is the query's checkpoint directory. With a
    ``cutover`` it takes over from an archived version (:mod:`spark_jobs.takeover`): its source skips
    the files no open window needs and its sink gets only windows ending after the cutover."""
    check_pipeline(model, pipeline)
    try:
        sink = model.tables[pipeline.sink] if pipeline.sink else None
        types = sink_types(sink, len(pipeline.outputs)) if sink is not None else []
        layouts = layout.pipelines[pipeline.name]
        if isinstance(pipeline.join, WindowJoin):
            stream, finalize = _compile_window_join(spark, model, pipeline.join, layouts, location, types, cutover)
        elif isinstance(pipeline.join, IntervalJoin):
            stream, finalize = _compile_interval_join(spark, model, pipeline.join, layouts, location, types)
        else:
            aggregate = pipeline.aggregate
            assert aggregate is not None, "check_pipeline refuses a pipeline without a window aggregation"
            after = cutover.watermark_ms if cutover is not None else None
            if aggregate.per_window:  # over whole windows of the aggregation it reads, in their micro-batch
                stage = _compile_stage(spark, model, aggregate.source, layouts[1:], location,  # type: ignore[arg-type]
                                       cutover=cutover, place=1)
                closed = _per_window(aggregate, stage, after, types)
            else:
                stage = _compile_stage(spark, model, aggregate, layouts, location, cutover=cutover)
                closed = _finalizer(stage, pipeline.outputs, pipeline.topn, types, after)
            per_batch = pipeline.topn is not None or aggregate.per_window or after is not None
            stream, finalize = _query(stage, closed, per_batch)
        # Analyse the per-batch plan now, so a bad SELECT list fails at start, not at the first window.
        # Over the stream itself, whose columns a batch has: Spark checks what a streaming query may
        # do only when it starts, and an empty batch built from a local list cost 0.18 s at start.
        with finalize(stream, -1, analyse=True) as rows:
            rows.schema
    except SQLModelError as error:
        raise SQLModelError(error.message, source=model.source, line=error.line or pipeline.line,
                            clause=error.clause or pipeline.name) from None
    return CompiledPipeline(pipeline, stream, finalize, sink)


def _query(stage: Stage, rows: Callable[..., DataFrame], per_batch: bool) -> tuple[DataFrame, Finalize]:
    """The pipeline's streaming plan, and what a micro-batch of it does before the sink.

    The rows of closed windows are made in the streaming plan wherever nothing needs the batch
    itself: each step ``foreachBatch`` adds is analysed, optimised and compiled again, as a plan
    of its own, in every micro-batch, and these are then one step, not three. Every column of the
    aggregation is carried to the stream's end and dropped in the batch: Spark prunes what a
    plan does not read from the aggregation below it, so a field the SELECT list does not read (an
    aggregate dropped from it, headroom) would leave the state, and its schema would no longer be
    the layout's. A batch is needed to assemble windows from slices, to rank a Top-N (a window
    function, which a stream cannot run) and to aggregate whole windows (``per_batch``); and for a
    take-over's cutover, which Spark would push below the aggregation onto each row's own window
    (a session's, before sessions merge)."""
    assembler = stage.assembler
    if assembler is None and not per_batch:
        held = stage.stream.columns
        stream, dropped = rows(stage.stream, held), [_HELD + name for name in held]

        @contextmanager
        def made(batch: DataFrame, batch_id: int, analyse: bool = False) -> Iterator[DataFrame]:
            yield batch.drop(*dropped)

        return stream, made

    @contextmanager
    def finalize(batch: DataFrame, batch_id: int, analyse: bool = False) -> Iterator[DataFrame]:
        if assembler is None:
            yield rows(batch)
            return
        if analyse:
            yield rows(assembler.shaped(batch))
            return
        with assembler(batch, batch_id) as windows:
            yield rows(windows)

    return stage.stream, finalize


# ------------------------------------------------------------------------------- stages
def _compile_stage(spark: SparkSession, model: JobModel, aggregate: WindowAggregate,
                  layouts: tuple[StageLayout, ...], location: str, slices: str = SLICES_DIR,
                  cutover: Cutover | None = None, place: int = 0, source: int = 0) -> Stage:
    """A window aggregation (with the cascade feeding it) as a streaming plan; ``slices`` is the
    directory of its retained slices in the checkpoint, if its windows are assembled; ``place``
    its place in ``Pipeline.stages``, which names the state a re-seed carried into it
    (``checkpoint.carried_dir``); ``source`` which of the query's inputs it reads (a join's
    branch)."""
    layout = layouts[0]
    # Aggregates that follow arrival order read where each row arrived from (check_pipeline keeps
    # them to stages reading a source).
    ordered = any(AGGREGATES[a.function].result.ordered for a in aggregate.aggregates)
    typed: Typing
    if isinstance(aggregate.source, WindowAggregate):
        upstream = _compile_stage(spark, model, aggregate.source, layouts[1:], location, slices, cutover, place + 1,
                                  source)
        assert upstream.assembler is None, "check_pipeline refuses a window over assembled windows"
        rows, mapping = _cascade_input(upstream, layouts[1])
        typed, time = upstream.results, "ts"
        for predicate in aggregate.filters:  # a WHERE over the windows it reads
            rows = rows.where(to_column(predicate.expr, mapping, typed))
        late_us = upstream.slicer.late_us + WINDOW_TIME_LATE_US
    else:
        rows, mapping, time = _source_input(spark, model, aggregate.source, aggregate.filters, aggregate.window,
                                            cutover, source, arrival=ordered)
        typed, late_us = Typing(model), 0
    plain_keys = [k for k in aggregate.group_keys if not k.is_window]
    keys = [KEY.format(i) for i in range(len(plain_keys))]
    # One projection of the input (each DataFrame step is analysed as it is built: about 20 ms).
    columns: list[Column] = [F.expr(f"{quoted(time)} AS ts")]
    if ordered:
        arrival = quoted(state.ARRIVAL)
        high, low = state.arrival_halves(arrival)
        columns += [F.col(state.ARRIVAL), F.expr(f"{state.arrival_order(arrival)} AS {quoted(state.ORDER)}"),
                    F.expr(f"{high} AS {quoted(state.ORDER_HIGH)}"), F.expr(f"{low} AS {quoted(state.ORDER_LOW)}")]
    columns += [to_column(k.value.expr, mapping, typed, name, state_key=True) for k, name in zip(plain_keys, keys)]
    inputs: list[tuple[Aggregate, str | None, str | None, str | None]] = []
    for index, agg in enumerate(aggregate.aggregates):
        value = f"v{index}" if agg.args else None
        if value:
            columns.append(to_column(value_of(agg), mapping, typed, value))
        key = f"by{index}" if AGGREGATES[agg.function].keyed else None
        if key:
            columns.append(to_column(agg.args[0].expr, mapping, typed, key))
        flt = None
        if agg.filter is not None:
            flt = f"f{index}"
            columns.append(to_column(agg.filter.expr, mapping, typed, flt))
        inputs.append((agg, value, flt, key))
    sets = None
    if aggregate.grouping_sets is not None:
        index_of = {k.value.key: i for i, k in enumerate(plain_keys)}
        sets = [[index_of[r.key] for r in members] for members in aggregate.grouping_sets]
    else:
        columns.append(F.expr(f"0 AS {state.GROUPING_SET}"))
    keyed = projected = rows.select(*columns)
    reduced = reduces_means(agg.function for agg in aggregate.aggregates)
    slots = [replace(_slot(agg, layout, value, flt, projected), key=key,
                     never_null=bool(agg.args) and never_null(agg.args[0].expr, model.tables),
                     reduced_mean=reduced and AGGREGATES[agg.function].result is Result.MEAN)
             for agg, value, flt, key in inputs]
    if sets is not None:
        keyed = state.explode_grouping_sets(projected, keys, sets, [c for c in projected.columns if c not in keys])
    slicer = slicer_for(_window(aggregate), late_us)
    sliced = slicer.slice(F.col("ts"))
    if layout.seeded:  # the input rows' contributions, and the state carried from the old checkpoint
        keyed = keyed.select(*keys, state.GROUPING_SET, "ts", *state.contributions(layout, slots))
        keyed = keyed.unionByName(state.carried_rows(read_carried(spark, location, place), keys, keyed.schema),
                                  allowMissingColumns=True)
        sliced = slicer.carried_slice(F.col("ts"), F.col(state.CARRIED_UNTIL))
    assert layout.set_keyed or sets is None, "adding GROUPING SETS is INCOMPATIBLE: the layout is fresh"
    with state.wrapping_sums(spark):  # its sums go past their range as Flink's do
        stream = keyed.groupBy(*state.state_key(layout, keys, sliced.alias("w"))).agg(*state.accumulate(layout, slots,
                                                                                                        "ts"))
    assembler = WindowAssembler(slicer, slots, keys, location, slices) if isinstance(slicer, SharedSlices) else None
    fields = state.buffer_fields(layout)
    return Stage(aggregate, stream.select(*keys, state.grouping_set(layout), "w", *fields), keys, slots, slicer,
                 assembler, results_typing(typed, aggregate))


def _compile_window_join(spark: SparkSession, model: JobModel, join: WindowJoin, layouts: tuple[StageLayout, ...],
                        location: str, sink_types: Sequence[tuple[str, str]],
                        cutover: Cutover | None = None) -> tuple[DataFrame, Finalize]:
    """Every branch of the join as a stage of one streaming query, joined per micro-batch
    (:mod:`spark_jobs.joins`). ``layouts`` follows ``Pipeline.stages``: each branch's chain in turn.
    A take-over's ``cutover`` holds for every branch: only windows ending after it are joined."""
    after = cutover.watermark_ms if cutover is not None else None
    branches, typed = [], {}
    for index, (branch, span) in enumerate(zip(join.branches, join.spans())):
        own, slices = layouts[span.start:span.stop], slices_dir(index)
        if branch.aggregate.per_window:
            stage = _compile_stage(spark, model, branch.aggregate.source, own[1:], location, slices,  # type: ignore[arg-type]
                                   cutover, span.start + 1, index)
            rows = _per_window(branch.aggregate, stage, after)
            results = results_typing(stage.results, branch.aggregate)
        else:
            stage = _compile_stage(spark, model, branch.aggregate, own, location, slices, cutover, span.start, index)
            rows = _finalizer(stage, branch.aggregate.outputs, None, (), after)
            results = stage.results
        typed.update(_branch_types(branch.alias, branch.aggregate.outputs, results))
        branches.append(Branch(branch.alias, stage.stream, stage.assembler, rows))
    return joined_stream(branches), join_finalizer(join, branches, sink_types, Typing(model, typed))


def _compile_interval_join(spark: SparkSession, model: JobModel, join: IntervalJoin, layouts: tuple[StageLayout, ...],
                          location: str, sink_types: Sequence[tuple[str, str]]) -> tuple[DataFrame, Finalize]:
    """The stream's rows and the window aggregation as one streaming query, joined per micro-batch
    (:mod:`spark_jobs.joins`)."""
    stream, source = join.stream, Typing(model)
    rows, mapping, _ = _source_input(spark, model, stream.table, stream.filters)
    rows = rows.select(*[to_column(c.value.expr, mapping, source, c.name) for c in stream.columns])
    aggregate = join.window.aggregate
    stage = _compile_stage(spark, model, aggregate, layouts, location)
    field = window_field_of(next(o for o in aggregate.outputs if o.name == join.bound).value.expr)
    reach = {"window_end": 0, "window_time": 1, "window_start": _window(aggregate).shape.span_ms}.get(field or "")
    assert reach is not None, "check_pipeline refuses an interval join around the start of a session"
    branches = [Branch(stream.alias, rows, None, lambda df: df),
                Branch(join.window.alias, stage.stream, stage.assembler,
                       _finalizer(stage, aggregate.outputs, None, ()))]
    typing = source.knowing({**_branch_types(stream.alias, stream.columns, source),
                             **_branch_types(join.window.alias, aggregate.outputs, stage.results)})
    return joined_stream(branches), interval_finalizer(join, branches, location, reach, sink_types, typing)


def _branch_types(alias: str, columns: Sequence[Output], typing: Typing) -> dict[str, exp.DataType]:
    """The types of a join branch's ``columns`` (``typing`` types their expressions), by the key a
    join's expressions name each with (:func:`analyzer.model.branch_column`)."""
    return {sql_key(branch_column(alias, c.name)): typing.of(c.value.expr) for c in columns}


def _per_window(aggregate: WindowAggregate, upstream: Stage, after_ms: int | None = None,
                sink_types: Sequence[tuple[str, str]] = ()) -> Callable[[DataFrame], DataFrame]:
    """Closed windows of ``upstream`` → the rows of ``aggregate``, whose groups are whole windows
    (``WindowAggregate.per_window``): an aggregation of the windows a micro-batch closes, with no
    state (every group of a window closes in the same micro-batch: the watermark is the query's),
    its results as Flink gives them (:func:`whole_windows_aggregate`); cast to the sink's
    ``sink_types`` where it has them. With ``after_ms`` (a take-over's cutover watermark) only
    windows ending after it."""
    windows, mapping = _window_columns(upstream)
    typing = upstream.results
    keys = [to_column(k.value.expr, mapping, typing, f"g{i}") for i, k in enumerate(aggregate.group_keys)]
    values = [whole_windows_aggregate(a, mapping, typing).alias(f"v{i}") for i, a in enumerate(aggregate.aggregates)]
    own = {k.value.key: f"g{i}" for i, k in enumerate(aggregate.group_keys)}
    own.update({a.expr_key: f"v{i}" for i, a in enumerate(aggregate.aggregates)})
    outputs = [to_column(o.value.expr, own, results_typing(typing, aggregate), o.name) for o in aggregate.outputs]
    having = [to_column(c.expr, own, results_typing(typing, aggregate)) for c in aggregate.having]
    if sink_types:
        outputs = [column.cast(data_type).alias(target) for column, (target, data_type) in zip(outputs, sink_types)]
    exists = F.col(state.ROWS) > 0
    new_windows = F.col("window_end") > F.timestamp_millis(F.lit(after_ms)) if after_ms is not None else None

    kept = [to_column(predicate.expr, mapping, typing) for predicate in aggregate.filters]

    def rows(batch: DataFrame) -> DataFrame:
        closed = batch.where(exists).select(*windows)
        for predicate in kept:  # a WHERE over the windows it reads
            closed = closed.where(predicate)
        if new_windows is not None:
            closed = closed.where(new_windows)
        with state.wrapping_sums(batch.sparkSession):  # its sums go past their range as Flink's do
            aggregated = closed.groupBy(*keys).agg(*values)
        for condition in having:
            aggregated = aggregated.where(condition)
        return aggregated.select(*outputs)

    return rows


def _slot(agg: Aggregate, layout: StageLayout, value: str | None, flt: str | None,
          projected: DataFrame) -> Slot:
    """The aggregate's place in the buffer, and its value family from its input's Spark type."""
    pool, index = layout.slot_of(agg.identity)
    if value is None:
        return Slot(agg, pool, index, None, Family.EXACT, T.LongType(), flt,
                    counts_rows=layout.is_row_count(pool, index))
    data_type = projected.schema[value].dataType
    shape = layout.pool(pool).shapes[index]
    found = state.family_of(data_type, agg.function)
    if isinstance(data_type, T.DecimalType) and shape.family in (Family.EXACT, Family.WIDE, Family.WIDE_EXACT_SUM) \
            and AGGREGATES[agg.function].exact_digits is not None:
        # As the analyzer placed it from Flink's type of the argument, whose digits Spark's may not
        # share (one recorded before wide DECIMALs had a family of their own: exact; or before their
        # sums were split: with an exact sum).
        found = shape.family
    family = shape.kept_family(found)
    expected = shape.family  # COUNT and generic slots take any family
    as_set = keeps_set(agg.function, agg.distinct)  # a set of values takes any family, as text
    if not as_set and (state_of(agg.function, family, agg.distinct)[0][0].pool is not pool
                             or expected not in (None, family)):
        # The analyzer placed the aggregate from the declared types; Spark's type disagrees.
        told = f"the declared columns make it {expected.described}" if expected else \
            "its type could not be told from the declared columns"
        raise SQLModelError(f"{agg.written}: its argument is {data_type.simpleString()} on Spark, but {told}; "
                            f"write CAST(... AS {'STRING' if family is Family.TEXT else 'a numeric or time type'}) "
                            "around it")
    if isinstance(data_type, T.DecimalType) and not as_set and data_type.scale > shape.kept_scale \
            and any(f.sql_type == "decimal" for f, _ in state_of(agg.function, family, agg.distinct)):
        # Kept at the slot's scale, the values would be rounded.
        raise SQLModelError(f"{agg.written}: its argument is {data_type.simpleString()} on Spark, but its state "
                            f"keeps {shape.kept_scale} decimal places; write CAST(... AS DECIMAL(p, "
                            f"{shape.kept_scale})) around it")
    if family is Family.EXACT and shape.precision is not None and not as_set \
            and state.digits_of(data_type) > shape.precision:
        # Taken in fewer digits than Spark gives the argument, a value would overflow.
        raise SQLModelError(f"{agg.written}: its argument is {data_type.simpleString()} on Spark, but its state "
                            f"takes {shape.precision} digits; write CAST(... AS DECIMAL({shape.precision}, "
                            f"{shape.kept_scale})) around it")
    return Slot(agg, pool, index, value, family, data_type, flt, ordered_arrivals=layout.ordered_arrivals)


def _source_input(spark: SparkSession, model: JobModel, name: str, filters: Sequence[Resolved],
                  window: Window | None = None, cutover: Cutover | None = None, source: int = 0,
                  arrival: bool = False) -> tuple[DataFrame, dict[str, str], str]:
    """Table ``name`` as a stream with its watermark (on processing time for a processing-time
    ``window``) and ``filters`` applied, and the column of its event time. A ``cutover`` skips
    the files the take-over need not open (those of the query's input ``source``), and the rows
    before its cutoff. With ``arrival``, each row says where it arrived from
    (:func:`spark_jobs.connectors.read_stream`)."""
    table, typing = declared(model, name), Typing(model)
    mapping = {sql_key(source_column(table.name, c.name)): c.name for c in table.columns if c.computed is None}
    df = read_stream(spark, table, dict(cutover.source_options) if cutover is not None else None,
                     files=source_filter(cutover, source) if cutover is not None else None, arrival=arrival)
    if window is not None and window.time_kind is TimeKind.PROCTIME:
        df = with_processing_time(spark, df)
        time = PROCTIME
        df = df.where(_after_watermark(is_record(), time))
    else:
        rowtime = time_attribute(table)
        assert table.rowtime is not None and rowtime is not None, "check_pipeline refuses a table without a watermark"
        time = table.rowtime
        if not isinstance(rowtime, exp.Column):  # computed: the watermark is declared on a column
            df = df.withColumn(time, to_column(rowtime, mapping, typing))
        df = df.withWatermark(quoted(time), f"{table.watermark_delay_ms} milliseconds")
        if cutover is not None and cutover.cutoff_ms is not None:
            df = df.where(F.col(quoted(time)) >= F.timestamp_millis(F.lit(cutover.cutoff_ms)))
    for predicate in filters:
        df = df.where(_after_watermark(to_column(predicate.expr, mapping, typing), time))
    return df, mapping, time


def _after_watermark(predicate: Column, time: str) -> Column:
    """``predicate`` as a filter that Spark keeps after the watermark.

    Flink generates the watermark at the source, from every record. Spark's optimizer moves a
    filter that does not read the event time below the watermark, which then sees only the rows
    that pass: a view keeping the bids of an event stream (Nexmark's shape) left the watermark
    behind the stream's other events, and its last windows never closed; the clock's ticks of
    processing time would move no watermark at all. Reading the event time keeps the filter above
    the watermark. A comparison, because ``IS NOT NULL`` of a time that cannot be null (processing
    time) is folded to true, and the filter moved again; a record without a time cannot be windowed."""
    return F.when(F.unix_micros(F.col(quoted(time))) > F.lit(_NO_TIME), predicate)


#: The prefix of an aggregation's columns carried to a stream's end, for its state to keep them all.
_HELD = "__stategate_held_"
#: Below every time Spark can hold, in microseconds since the epoch.
_NO_TIME = -(1 << 63)


def _cascade_input(upstream: Stage, layout: StageLayout) -> tuple[DataFrame, dict[str, str]]:
    """An upstream window's emitted rows (one per window) as the input of the next aggregation;
    ``layout`` is the upstream's: its state keeps every field where the layout says so
    (:func:`state.kept_whole`), else only those read here, as it was recorded."""
    readable = upstream.slots
    finals = {slot.aggregate.identity: f"u{i}" for i, slot in enumerate(readable)}
    level = _window(upstream.aggregate).level
    start, end = upstream.slicer.bounds(F.col("w"))
    plain = [k for k in upstream.aggregate.group_keys if not k.is_window]
    columns = [*[key_read(k.value.expr, name, upstream.results) for k, name in zip(plain, upstream.keys)],
               *[state.final_value(s, finals[s.aggregate.identity]) for s in readable],
               start.alias("_ws"), end.alias("_we"), F.window_time(F.col("w")).alias("ts")]
    mapping = {slot.aggregate.expr_key: finals[slot.aggregate.identity] for slot in readable}
    mapping.update({k.value.key: name for k, name in zip(plain, upstream.keys)})
    mapping.update({sql_key(window_column(level, "window_start")): "_ws",
                    sql_key(window_column(level, "window_end")): "_we",
                    sql_key(window_column(level, "window_time")): "ts"})
    kept = upstream.stream.where(state.kept_whole(layout)) if layout.whole else upstream.stream
    return kept.select(*columns), mapping


def _window(aggregate: WindowAggregate) -> Window:
    """The aggregation's own window. Every stage of a Spark job has one: an aggregation grouped by
    the windows it reads runs in its upstream's micro-batch, not as a stage."""
    if aggregate.window is None:
        raise SQLModelError(f"{aggregate.written}: a stage without a window of its own")
    return aggregate.window


# ------------------------------------------------------------------------------- per batch
def _window_columns(stage: Stage) -> tuple[list[Column], dict[str, str]]:
    """A closed window of the stage as one row: its keys, each aggregate's value and the window
    attributes; and which model expression each column holds (by key)."""
    aggregate = stage.aggregate
    level = _window(aggregate).level
    plain = [k for k in aggregate.group_keys if not k.is_window]
    mapping = {k.value.key: name for k, name in zip(plain, stage.keys)}
    mapping.update({slot.aggregate.expr_key: f"a{i}" for i, slot in enumerate(stage.slots)})
    for name in WINDOW_FIELDS:
        mapping[sql_key(window_column(level, name))] = name
    # A legacy *_PROCTIME is written as window_time is (spark_jobs.proctime says why).
    mapping[sql_key(window_column(level, "window_proctime"))] = "window_time"
    start, end = stage.slicer.bounds(F.col("w"))
    columns = [*[key_read(k.value.expr, name, stage.results) for k, name in zip(plain, stage.keys)],
               *[state.final_value(slot, f"a{i}", stage.assembler is not None) for i, slot in enumerate(stage.slots)],
               start.alias("window_start"), end.alias("window_end"),
               _window_time(end).alias("window_time")]
    return columns, mapping


def _window_time(end: Column) -> Column:
    """Flink's ``window_time`` of a window ending at ``end``: its last millisecond, as a rowtime is a
    TIMESTAMP(3) (Spark's ``window_time()``, which a cascade reads, is its last microsecond)."""
    return end - F.expr("INTERVAL 1 MILLISECOND")


def _finalizer(stage: Stage, outputs: Sequence[Output], topn: TopN | None,
              sink_types: Sequence[tuple[str, str]], after_ms: int | None = None) -> Callable[[DataFrame], DataFrame]:
    """Closed windows of the stage → the query's rows: Top-N, SELECT list, the sink's types. With
    ``after_ms`` (a take-over's cutover watermark) only windows ending after it: the archived
    version emitted the others."""
    # The columns are built once here, not per micro-batch: each is a round trip to the JVM.
    windows, mapping = _window_columns(stage)
    rank_key = sql_key(exp.column(topn.rank_column, table=RANK_MARKER)) if topn else None
    if rank_key:
        mapping[rank_key] = "_rank"
    result = [to_column(o.value.expr, mapping, stage.results, o.name) for o in outputs]
    if sink_types:
        result = [column.cast(data_type).alias(target) for column, (target, data_type) in zip(result, sink_types)]
    exists = F.col(state.ROWS) > 0
    having = [to_column(condition.expr, mapping, stage.results) for condition in stage.aggregate.having]
    top: tuple[Column, Column] | None = None  # the rank of a row, and whether it is kept
    if topn is not None:
        order = [_ordered(to_column(k.value.expr, mapping, stage.results), k) for k in topn.order_keys]
        spec = SparkWindow.partitionBy(*[to_column(k.expr, mapping, stage.results) for k in _ranked_by(topn, stage)]) \
            .orderBy(*order)
        kept = F.col("_rank").between(topn.first, topn.limit)
        for condition in topn.filters:  # Flink's Calc over the ranked rows
            kept = kept & to_column(condition.expr, mapping, stage.results)
        top = F.row_number().over(spec), kept

    new_windows = F.col("window_end") > F.timestamp_millis(F.lit(after_ms)) if after_ms is not None else None

    def finalize(batch: DataFrame, held: Sequence[str] = ()) -> DataFrame:
        """The sink's rows of ``batch``, and its columns ``held`` beside them (as ``_HELD + name``)."""
        pivot = batch.where(exists).select(*windows, *[F.col(name).alias(_HELD + name) for name in held])
        if new_windows is not None:
            pivot = pivot.where(new_windows)
        for condition in having:  # before a Top-N: it ranks the rows HAVING keeps
            pivot = pivot.where(condition)
        if top is not None:
            pivot = pivot.withColumn("_rank", top[0]).where(top[1])
        return pivot.select(*result, *[F.col(_HELD + name) for name in held])

    return finalize


def _ranked_by(topn: TopN, stage: Stage) -> list[Resolved]:
    """The keys a window Top-N ranks within, as Flink's window rank operator does: it keeps each
    window's rows by the window's end, so ``window_start`` is no key of its own. For TUMBLE, HOP and
    CUMULATE windows one end is one start; two SESSIONs ending together rank as one partition
    whatever their starts (probed in Flink 2.3: of sessions [08:00, 08:06) and [08:03, 08:06), Top-1
    keeps one)."""
    window = _window(stage.aggregate)
    if window.operator is not WindowOperator.TVF or not isinstance(window.shape, Session):
        return list(topn.partition_keys)
    return [k for k in topn.partition_keys if window_field_of(k.expr) != "window_start"]


def _ordered(column: Column, key: OrderKey) -> Column:
    """A Top-N sort key as Flink ranks it, NULLs where the key says (never Spark's own default)."""
    if key.descending:
        return column.desc_nulls_first() if key.nulls_first else column.desc_nulls_last()
    return column.asc_nulls_first() if key.nulls_first else column.asc_nulls_last()

"""What the Spark engine runs, decided from the job model alone.

The job compiles a pipeline only once it passes here (:func:`check_pipeline`), and the Airflow gate
asks the same of the whole script (:func:`check_runnable`) before anything changes: SQL the engine
cannot run is refused with the message the job would give, at the place of the construct
(file:line:col where the parser saw it, else the statement's line), before a redeploy stops,
archives or restarts anything. Two levels:

* :func:`check_constructs`: the windows, aggregates and joins the engine's operators run, whatever
  the script declares. ``stategate check OLD NEW`` asks this much (its scripts may be fragments
  that declare no tables);
* :func:`check_runnable`: a job that can be deployed: every table read declared with a watermark,
  connectors, formats, options and types the engine reads and writes, a sink per pipeline. The gate
  and ``stategate check --deployed`` ask this.

The engine's vocabulary lives here for the same reason: its connectors and formats, the Flink
types it maps to Spark's (:func:`spark_type`) and the aggregates it runs (:mod:`analyzer.aggregates`).
No PySpark is imported.

What only Spark's own types can tell (an argument typed by a function the analyzer does not know)
is checked again when the job compiles, against the types Spark gives.
"""

from __future__ import annotations

import re
from typing import Callable

from sqlglot import exp

from stategate.analyzer.aggregates import ACCURACY, AGGREGATES, NULL_TREATMENTS, SEPARATOR, Distinct
from stategate.analyzer.dialect import Flink, function_name
from stategate.analyzer.functions import spark_lacks
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import (FILESYSTEM, KAFKA, PRINT, WINDOW_MARKER, Aggregate, IntervalJoin, JobModel, Pipeline, Resolved, Table,
                                      TimeKind, Window, WindowAggregate, WindowOperator, sql_key)
from stategate.analyzer.scope import time_attribute, window_field_of
from stategate.analyzer.layout import argument_family, value_of
from stategate.analyzer.families import Family
from stategate.analyzer.value_types import TIMES, Typing, exact_scale, family, text_digits, value_type
from stategate.analyzer.windows import Session, SharedKind

CONNECTORS = (FILESYSTEM, PRINT, KAFKA)
FILE_FORMATS = ("csv", "json", "parquet")
KAFKA_FORMATS = ("json", "csv")
#: Spark settings every job runs with, whatever it sets: Flink's TIMESTAMP has no zone (values are
#: read and written unchanged), and a restart must be checked against the state's schema.
FIXED_SETTINGS = {"spark.sql.session.timeZone": "UTC", "spark.sql.streaming.stateStore.stateSchemaCheck": "true"}
#: Flink's simple types and the Spark type each is read and written as.
_SIMPLE_TYPES = {
    "STRING": "STRING", "BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT",
    "INT": "INT", "INTEGER": "INT", "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE",
    "DATE": "DATE", "BYTES": "BINARY",
}


def check_constructs(model: JobModel) -> None:
    """Raise :class:`SQLModelError` for the first setting, window, aggregate or join of ``model`` the
    engine cannot run, naming it and its place."""
    check_settings(model)
    for pipeline in model.pipelines:
        _located(model, pipeline, _check_constructs)


def check_runnable(model: JobModel) -> None:
    """Raise :class:`SQLModelError` for the first construct of ``model`` the engine cannot run as a
    deployed job, naming it and its place."""
    check_settings(model)
    for pipeline in model.pipelines:
        if pipeline.sink is None:
            raise SQLModelError("a bare SELECT has no sink: a deployed job writes with INSERT INTO",
                                source=model.source, line=pipeline.line, clause=pipeline.name)
        check_pipeline(model, pipeline)


#: The aggregates the engine runs over whole windows of another window aggregation: Spark's own,
#: their results as Flink's (``spark_jobs.expressions.whole_windows_aggregate``).
WHOLE_WINDOW_AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG"})


def check_pipeline(model: JobModel, pipeline: Pipeline) -> None:
    """Raise :class:`SQLModelError` for the first construct of ``pipeline`` the engine cannot run:
    its operators, the tables it reads and the sink it writes (where it has one)."""
    _located(model, pipeline, _check_constructs)
    _located(model, pipeline, _check_tables)


def check_settings(model: JobModel) -> None:
    """Refuse a ``SET`` of a Spark setting the engine fixes for Flink's semantics. (Whether Spark
    takes a setting at run time only a session can say: the job asks it when it starts.)"""
    for key, value in model.settings.items():
        if key in FIXED_SETTINGS:
            raise SQLModelError(f"SET '{key}' = '{value}': stategate runs every job with {key} = "
                                f"{FIXED_SETTINGS[key]}, which Flink's semantics need", source=model.source,
                                clause="SET")


def _located(model: JobModel, pipeline: Pipeline, check: Callable[[JobModel, Pipeline], None]) -> None:
    try:
        check(model, pipeline)
    except SQLModelError as error:
        raise SQLModelError(error.message, source=model.source, line=error.line or pipeline.line, col=error.col,
                            clause=error.clause or pipeline.name) from None


def _check_constructs(model: JobModel, pipeline: Pipeline) -> None:
    if pipeline.unsupported:
        raise SQLModelError(f"not supported on Spark: {pipeline.unsupported[0]}")
    if pipeline.joins and pipeline.join is None:
        raise SQLModelError("not supported on Spark: a join other than a window join (window aggregations of one "
                            "window, joined on window_start and window_end) or an interval join (a stream and window "
                            f"results, on a range of its event time around a window attribute): {pipeline.joins[0][:80]}")
    if model.emit_enabled():
        raise SQLModelError("early-fire / late-fire (table.exec.emit.*) is not supported on Spark")
    if not pipeline.stages() and pipeline.topn is not None:
        raise SQLModelError("a window Top-N over a window TVF's rows (a window deduplication among them) is not "
                            "supported on Spark: rank the rows of a window aggregation")
    if not pipeline.stages():
        raise SQLModelError("the query has no window aggregation; stategate runs window aggregations")
    for stage in pipeline.stages():
        _check_stage(model, pipeline, stage)
    if isinstance(pipeline.join, IntervalJoin):
        _check_interval_join(pipeline.join)
    _check_expressions(model, pipeline)


#: What a user writes instead of an expression Spark computes otherwise than Flink.
TIME_AS_TEXT = ("Flink writes every digit of a second a time's type has (nine of a TIMESTAMP(9)) and Spark keeps "
                "microseconds: write DATE_FORMAT(t, 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
COLLECTION_AS_TEXT = ("Flink writes an ARRAY as text with NULL in capitals ([1, NULL]), a MULTISET in its hash "
                      "map's order, and Spark otherwise: keep the ARRAY or MULTISET, or aggregate the values as "
                      "text and write '[' || ARRAY_JOIN(ARRAY_AGG(CAST(x AS STRING)), ', ', 'NULL') || ']'")
#: The types of collections, which Flink and Spark write as text differently (a MULTISET is a LIST to sqlglot).
_COLLECTION_TYPES = (exp.DataType.Type.ARRAY, exp.DataType.Type.LIST, exp.DataType.Type.MAP)


def _check_expressions(model: JobModel, pipeline: Pipeline) -> None:
    """The expressions the engine writes as Spark SQL: every function they call one Spark has (or
    one of Flink's the engine writes as Flink computes it, :mod:`analyzer.functions`), and none
    that Spark computes otherwise than Flink, refused with what to write instead (a division of
    integers, and a BOOLEAN, a time or any value cast to a text of a length, the engine runs as
    Flink's, :mod:`spark_jobs.expressions`): a time of more digits of a second than Spark keeps cast
    to text, whose every digit Flink writes; an ARRAY or a MULTISET cast to text (``[1, NULL]``
    against ``[1, null]``)."""
    for expr in _expressions(model, pipeline):
        _check_calls(model, expr)
        for node in expr.find_all(exp.Cast):
            _check_expression(model, node)


def _expressions(model: JobModel, pipeline: Pipeline) -> list[exp.Expr]:
    """Every expression of ``pipeline`` the engine computes: its outputs, its stages' keys,
    aggregates' arguments and filters, the rows' filters, the computed event time of a table it
    reads, its Top-N's keys and the filters beside its rank, and its join's conditions."""
    resolved: list[Resolved | None] = [o.value for o in pipeline.outputs]
    for stage in pipeline.stages():
        resolved += [*(a for agg in stage.aggregates for a in agg.args), *(agg.filter for agg in stage.aggregates),
                     *(k.value for k in stage.group_keys if not k.is_window), *stage.filters]
    if pipeline.topn is not None:
        resolved += [*pipeline.topn.partition_keys, *(k.value for k in pipeline.topn.order_keys), *pipeline.topn.filters]
    join = pipeline.join
    if isinstance(join, IntervalJoin):
        resolved += [join.condition, *join.stream.filters, *(c.value for c in join.stream.columns)]
    elif join is not None:
        resolved += [*join.conditions, *join.filters]
    found = [r.expr for r in resolved if r is not None and not isinstance(r.expr, (exp.Column, exp.Literal))]
    for name in {stage.source for stage in pipeline.stages() if isinstance(stage.source, str)}:
        rowtime = time_attribute(model.tables[name]) if name in model.tables else None
        if rowtime is not None and not isinstance(rowtime, exp.Column):
            found.append(rowtime)
    return found


def _check_calls(model: JobModel, expr: exp.Expr) -> None:
    lacking = spark_lacks(expr, Typing(model))
    if lacking is None:
        return
    call, why = lacking
    line, col = position(call)
    name = function_name(call)
    if name.lower() in {f.lower() for f in model.functions}:
        why = f"{name} is a user-defined function (CREATE FUNCTION), which the engine cannot run on Spark"
    raise SQLModelError(f"{call.sql(dialect=Flink)}: {why}", line=line, col=col)


def _check_expression(model: JobModel, node: exp.Cast) -> None:
    line, col = position(node)
    written = node.sql(dialect=Flink)
    if node.to.is_type(*exp.DataType.TEXT_TYPES):
        kind = Typing(model).of(node.this)  # as the job types it
        if kind.this in TIMES and text_digits(kind) is None:
            raise SQLModelError(f"{written}: {TIME_AS_TEXT}", line=line, col=col)
        if kind.this in _COLLECTION_TYPES:
            raise SQLModelError(f"{written}: {COLLECTION_AS_TEXT}", line=line, col=col)


def _check_tables(model: JobModel, pipeline: Pipeline) -> None:
    """The tables a pipeline reads (with the window that reads each) and the sink it writes."""
    for stage in pipeline.stages():
        if stage.window is not None and not isinstance(stage.source, WindowAggregate):
            _check_source(model, stage.source, stage.window)
    if isinstance(pipeline.join, IntervalJoin):
        _check_source(model, pipeline.join.stream.table, None)
    if pipeline.sink is not None:
        _check_sink(model, pipeline)


def _check_stage(model: JobModel, pipeline: Pipeline, stage: WindowAggregate) -> None:
    window = stage.window
    if isinstance(stage.source, WindowAggregate) and stage.source.having:
        raise SQLModelError(f"HAVING {' AND '.join(c.written for c in stage.source.having)} in an aggregation "
                            "another one reads is not supported on Spark: filter in the aggregation that reads it")
    if window is None and stage.per_window:
        _check_whole_windows(pipeline, stage)
        return
    if window is None:
        raise SQLModelError("GROUP BY without a window is not supported (its state never expires)")
    if stage.udtfs:
        raise SQLModelError(f"table function LATERAL TABLE({stage.udtfs[0]}) is not supported on Spark")
    if stage.between:
        clause = stage.between[0]
        raise SQLModelError(f"a {clause.kind.value} on window attributes before GROUP BY is not supported: "
                            f"{clause.value.written}")
    _check_window_fields_read(stage, window)
    _check_window_grouped(stage, window)
    if isinstance(window.shape, Session) and window.operator is WindowOperator.TVF:
        _check_session_keys(stage, window)
    for aggregate in stage.aggregates:
        _check_aggregate(model, aggregate)
        if isinstance(stage.source, WindowAggregate) and AGGREGATES[aggregate.function].result.ordered:
            line, col = position(aggregate.expr)
            raise SQLModelError(f"{aggregate.written} follows the order rows arrive in, and the windows of the "
                                "aggregation it reads arrive in no order on Spark; aggregate the source's rows",
                                line=line, col=col)
    upstream = stage.source.window if isinstance(stage.source, WindowAggregate) else None
    if upstream is not None and isinstance(upstream.shape, SharedKind):
        raise SQLModelError(f"a window over the results of a {upstream.kind} window is not supported on Spark "
                            "(its windows are assembled per micro-batch)")


#: The window attributes a GROUP BY over a window TVF must hold for Flink to run a window aggregation.
_WINDOW_BOUNDS = ("window_start", "window_end")


def _check_window_grouped(stage: WindowAggregate, window: Window) -> None:
    """A GROUP BY of a window TVF's rows that lacks window_start or window_end is no window
    aggregation on Flink (probed in 2.3: its planner makes it a GroupAggregate, which updates its
    rows as rows come, late ones too, and keeps its state for ever); the engine runs window
    aggregations, which emit each window once and drop rows behind the watermark."""
    grouped = {key.window_field for key in stage.group_keys}
    missing = [bound for bound in _WINDOW_BOUNDS if bound not in grouped]
    if window.operator is WindowOperator.TVF and missing:
        raise SQLModelError(f"a GROUP BY of a window TVF without {' and '.join(missing)} is not supported: Flink runs "
                            "it as an updating aggregation, not a window aggregation; group by window_start and "
                            "window_end")


def _check_session_keys(stage: WindowAggregate, window: Window) -> None:
    """Spark merges sessions per grouping key. A legacy GROUP BY SESSION(...) means exactly that; a
    SESSION TVF merges per PARTITION BY key, so those must be the GROUP BY keys, of every grouping
    set too. Flink's planner asks the same of a window aggregation, and runs one grouped otherwise
    as an aggregation that updates its rows, over a window of its own for every row."""
    partition = [k.key for k in window.partition_keys]
    plain = [k.value.key for k in stage.group_keys if not k.is_window]
    if stage.grouping_sets is None:
        if plain != partition:
            raise SQLModelError("SESSION PARTITION BY keys must be the GROUP BY keys, in the same order")
        return
    in_sets = {key.key for grouping in stage.grouping_sets for key in grouping}
    around = [key for key in plain if key not in in_sets]  # the GROUP BY keys beside the sets
    for grouping in stage.grouping_sets:
        if around + [key.key for key in grouping] != partition:
            written = "(" + ", ".join(key.written for key in grouping) + ")"
            raise SQLModelError(f"SESSION PARTITION BY keys must be the GROUP BY keys of every grouping set, in the "
                                f"same order, and grouping set {written} has others (Flink runs such an "
                                "aggregation as one that updates its rows, over a window for every row): "
                                "aggregate each grouping set in a query of its own, over a SESSION partitioned "
                                "by its keys")


def _check_window_fields_read(stage: WindowAggregate, window: Window) -> None:
    """What a row brings to its window (an aggregate's arguments and FILTER, a computed grouping
    key) is computed before Spark gives the row its window, inside the aggregation; so none of it
    reads the window's own attributes. The SELECT computes with them over the results."""
    own = f"{WINDOW_MARKER}{window.level}"
    read = [(agg.written, agg.expr, value) for agg in stage.aggregates
            for value in (*agg.args, agg.filter) if value is not None]
    read += [(key.value.written, key.value.expr, key.value) for key in stage.group_keys if not key.is_window]
    for written, node, value in read:
        field = next((c.name for c in value.expr.find_all(exp.Column) if c.table == own), None)
        if field is not None:
            line, col = position(node)
            raise SQLModelError(f"{written} reads {field}, which Spark gives a row only inside the window "
                                "aggregation, after what the row brings to it is computed: compute with "
                                f"{field} in the SELECT, over the aggregates' results "
                                "(TIMESTAMPDIFF(SECOND, window_start, MAX(t)))", line=line, col=col)


def _check_whole_windows(pipeline: Pipeline, stage: WindowAggregate) -> None:
    """An aggregation of whole windows of the one it reads (``WindowAggregate.per_window``): the
    windows a micro-batch closes, aggregated in it by Spark's own aggregate functions, with no state
    of its own (``spark_jobs.compile``)."""
    if pipeline.topn is not None and pipeline.aggregate is stage:
        raise SQLModelError("a window Top-N over an aggregation of whole windows (GROUP BY window_start, window_end "
                            "over another window aggregation) is not supported on Spark")
    for aggregate in stage.aggregates:
        if aggregate.function not in WHOLE_WINDOW_AGGREGATES or aggregate.modifiers.strip():
            line, col = position(aggregate.expr)
            raise SQLModelError(f"{aggregate.written}: over whole windows of another window aggregation the engine "
                                f"runs {', '.join(sorted(WHOLE_WINDOW_AGGREGATES))}", line=line, col=col)


def _check_literal(aggregate: Aggregate, literal: str, constant: exp.Expr, line: int | None, col: int | None) -> None:
    """The constant after an aggregate's value: a string separator, or an accuracy between 0 and 1."""
    if literal == SEPARATOR and not (isinstance(constant, exp.Literal) and constant.is_string):
        raise SQLModelError(f"{aggregate.written}: its separator must be a string literal", line=line, col=col)
    if literal == ACCURACY and not (isinstance(constant, exp.Literal) and constant.is_number
                                    and 0 < float(constant.this) < 1):
        raise SQLModelError(f"{aggregate.written}: its accuracy must be a number between 0 and 1 (exclusive), "
                            "as VVR requires", line=line, col=col)


def _check_clauses(aggregate: Aggregate, line: int | None, col: int | None) -> None:
    """The clauses inside an aggregate call that sqlglot reads and Flink 2.3 does not take as
    written (each probed there): ``COUNT(DISTINCT *)``, a FILTER after an ``IGNORE NULLS`` or
    ``RESPECT NULLS`` inside the parentheses (which sqlglot then leaves on the value), and an ORDER
    BY inside the parentheses, which Flink's parser takes only in ARRAY_AGG and JSON_ARRAYAGG, where
    the values still come in the order rows arrive in."""
    values = [arg.expr for arg in aggregate.args]
    if aggregate.distinct and any(isinstance(v, exp.Star) for v in values):
        raise SQLModelError(f"{aggregate.written}: DISTINCT * is a syntax error in Flink", line=line, col=col)
    if aggregate.filter is not None and any(isinstance(v, NULL_TREATMENTS) for v in values):
        raise SQLModelError(f"{aggregate.written}: Flink refuses a FILTER on an aggregate with IGNORE NULLS or "
                            "RESPECT NULLS (\"FILTER must be applied to aggregate function\")", line=line, col=col)
    json_array = aggregate.expr.find(exp.JSONArrayAgg)
    if any(isinstance(v, exp.Order) for v in values) or (json_array is not None and json_array.args.get("order")):
        raise SQLModelError(f"{aggregate.written}: Flink takes an ORDER BY inside the call only in ARRAY_AGG and "
                            "JSON_ARRAYAGG, and ignores it there (the values stay in the order rows arrive in): "
                            "leave it out", line=line, col=col)


def _check_aggregate(model: JobModel, aggregate: Aggregate) -> None:
    """An aggregate the engine runs: in the table, of one argument, over a family it takes."""
    line, col = position(aggregate.expr)
    if aggregate.user_defined:
        raise SQLModelError(f"user-defined aggregate {aggregate.written} cannot run on Spark here", line=line, col=col)
    function = AGGREGATES.get(aggregate.function)
    if function is None:
        raise SQLModelError(f"aggregate {aggregate.written} is not supported "
                            f"(supported: {', '.join(a.spelled for a in AGGREGATES.values())})", line=line, col=col)
    inputs = function.value_at + 1
    if len(aggregate.args) > inputs + bool(function.literal):
        raise SQLModelError(f"aggregate {aggregate.written} takes {inputs + bool(function.literal)} argument(s) here",
                            line=line, col=col)
    for constant in aggregate.args[inputs:]:
        _check_literal(aggregate, function.literal, constant.expr, line, col)
    if function.keyed and family(model, aggregate.args[0].expr) not in (Family.TEXT, None):
        raise SQLModelError(f"{aggregate.written}: its key must be text (STRING), as Flink requires",
                            line=line, col=col)
    _check_clauses(aggregate, line, col)
    if not function.takes(aggregate.modifiers):
        raise SQLModelError(f"{aggregate.written}: {aggregate.modifiers.strip()} is not supported", line=line, col=col)
    if aggregate.distinct and function.distinct is Distinct.REFUSED:
        raise SQLModelError(f"{aggregate.written}: DISTINCT is not supported for {function.spelled}", line=line, col=col)
    found = argument_family(model, aggregate)
    if found is not None and function.state_of(found) is None:
        raise SQLModelError(f"{aggregate.written}: {function.spelled} over {found.described} is not supported",
                            line=line, col=col)
    kind = value_type(model, value_of(aggregate)) if aggregate.args else None
    if kind is not None and not function.operands.take(kind):
        raise SQLModelError(f"{aggregate.written}: Flink's {function.spelled} takes {function.operands.described}, "
                            f"no {kind.sql(dialect=Flink)}", line=line, col=col)
    if function.result.spread and found is Family.EXACT and exact_scale(model, aggregate.args[0].expr) is None:
        raise SQLModelError(f"{aggregate.written}: the scale of its argument cannot be told from the declared "
                            "columns; write CAST(... AS DECIMAL(p, s)) around it", line=line, col=col)


def _check_source(model: JobModel, name: str, window: Window | None) -> None:
    """A table read as a stream: declared, with a watermark for event time, in a connector and
    format the engine reads."""
    table = declared(model, name)
    if window is None or window.time_kind is not TimeKind.PROCTIME:
        rowtime = time_attribute(table)
        if table.rowtime is None or rowtime is None or table.watermark_delay_ms is None:
            raise SQLModelError(f"table {name} needs WATERMARK FOR <column> AS <column> - INTERVAL '...' "
                                "for event-time windows and joins", line=table.line)
        if window is not None and window.time_attr.key != sql_key(rowtime):
            raise SQLModelError(f"window time attribute {window.time_attr.written} must be the rowtime column "
                                f"{table.rowtime} of {table.name} or a processing-time attribute (PROCTIME())")
    kind = connector(table)
    if kind == PRINT:
        raise SQLModelError(f"table {table.name}: the print connector cannot be read", line=table.line)
    file_format(table, FILE_FORMATS if kind == FILESYSTEM else KAFKA_FORMATS)
    option(table, "path" if kind == FILESYSTEM else "properties.bootstrap.servers")
    if kind == KAFKA:
        option(table, "topic")
    for column in table.columns:
        if column.computed is None:
            spark_type(column.type, column.name, table.name)


def _check_interval_join(join: IntervalJoin) -> None:
    aggregate = join.window.aggregate
    window = aggregate.window
    field = window_field_of(next(o for o in aggregate.outputs if o.name == join.bound).value.expr)
    if window is not None and field == "window_start" and window.shape.span_ms is None:
        raise SQLModelError(f"an interval join around {join.bound} of a {window.kind} window: its "
                            "windows have no fixed length (use window_end)")


def _check_sink(model: JobModel, pipeline: Pipeline) -> None:
    table = model.tables.get(pipeline.sink or "")
    if table is None:
        raise SQLModelError(f"INSERT INTO {pipeline.sink}: the sink table is not declared")
    sink_types(table, len(pipeline.outputs))
    kind = connector(table)
    if kind == FILESYSTEM:
        file_format(table, FILE_FORMATS)
        option(table, "path")
        if table.partition_keys:
            raise SQLModelError(f"table {table.name}: a PARTITIONED BY sink is not supported on Spark (a "
                                "micro-batch's files are renamed into one directory); drop PARTITIONED BY",
                                line=table.line)
    elif kind == KAFKA:
        file_format(table, KAFKA_FORMATS)
        option(table, "properties.bootstrap.servers")
        option(table, "topic")


def declared(model: JobModel, name: str) -> Table:
    table = model.tables.get(name)
    if table is None:
        raise SQLModelError(f"table {name} is read but not declared with CREATE TABLE")
    return table


def sink_types(sink: Table, width: int) -> list[tuple[str, str]]:
    """The sink's column names and Spark types, which the query's columns are cast to."""
    if not sink.columns:
        return []
    physical = [c for c in sink.columns if c.computed is None]
    if len(physical) != width:
        raise SQLModelError(f"INSERT INTO {sink.name}: the query has {width} columns, the table {len(physical)}")
    return [(c.name, spark_type(c.type, c.name, sink.name)) for c in physical]


def spark_type(flink_type: str | None, column: str, table: str) -> str:
    """Flink DDL type → Spark DDL type."""
    if not flink_type:
        raise SQLModelError(f"column {table}.{column} has no type")
    text = re.sub(r"\s+NOT NULL$", "", flink_type.upper())
    if text in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[text]
    if text.startswith(("VARCHAR", "CHAR", "TEXT")):
        return "STRING"
    if text.startswith(("DECIMAL", "NUMERIC")):
        return text.replace("NUMERIC", "DECIMAL")
    if text.startswith(("TIMESTAMP", "DATETIME")):
        # Flink TIMESTAMP(3) is wall-clock time; the job session runs in UTC, so values are unchanged.
        return "TIMESTAMP"
    if text.startswith("ARRAY<") and text.endswith(">"):  # ARRAY_AGG's result, an array of its argument's type
        return f"ARRAY<{spark_type(flink_type.strip()[6:-1], column, table)}>"
    if text.startswith("MULTISET<") and text.endswith(">"):  # COLLECT's: each value with its count
        return f"MAP<{spark_type(flink_type.strip()[9:-1], column, table)}, INT>"
    if text.startswith("ROW"):  # a nested row: a struct of its fields, each typed by these rules
        fields = exp.DataType.build(flink_type, dialect=Flink).expressions
        return "STRUCT<" + ", ".join(
            f"`{f.name}`: {spark_type(f.args['kind'].sql(dialect=Flink), f'{column}.{f.name}', table)}"
            for f in fields) + ">"
    raise SQLModelError(f"column {table}.{column}: type {flink_type} is not supported on Spark")


def option(table: Table, key: str) -> str:
    value = table.options.get(key)
    if value is None:
        raise SQLModelError(f"table {table.name} needs the option '{key}'", line=table.line)
    return value


def file_format(table: Table, allowed: tuple[str, ...]) -> str:
    fmt = option(table, "format")
    if fmt not in allowed:
        raise SQLModelError(f"table {table.name}: format '{fmt}' is not supported (use {', '.join(allowed)})",
                            line=table.line)
    return fmt


def connector(table: Table) -> str:
    name = option(table, "connector")
    if name not in CONNECTORS:
        raise SQLModelError(f"table {table.name}: connector '{name}' is not supported "
                            f"(use {', '.join(CONNECTORS[:-1])} or {CONNECTORS[-1]})", line=table.line)
    return name


def position(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """Where the parser saw ``node``: its line and first column (None where it kept none)."""
    meta = node.meta if node is not None else {}
    line, col, start, end = (meta.get(key) for key in ("line", "col", "start", "end"))
    if line is None or col is None:
        return None, None
    return line, col - (end - start) if start is not None and end is not None else col

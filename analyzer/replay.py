"""How far back a new version must read when its state is cleared: the replay span of each pipeline.

After a clear-state redeploy the new version starts without state. Every window it emits after the
cutover must be complete, so it reads again what its longest open window can still hold: the window's
span (TUMBLE and HOP size, CUMULATE max size; cascaded windows add up along the chain; a window join
its longest branch; an interval join its window and the range around it; a Top-N its window's), plus
the watermark delay (rows that late still count) and allowed lateness where configured. Reading from
``cutover watermark - span`` rebuilds every open window, and nothing older is needed.

Two kinds have no such bound. A SESSION window grows while events keep coming, so the span is a cap
the user sets (``SET 'stategate.replay.session-cap'``, default :data:`DEFAULT_SESSION_CAP_MS`): a
session open longer than the cap loses its earliest rows, and the report says so. A processing-time
window cannot be replayed at all (its time is the wall clock's): its windows open at the cutover
start empty.

A take-over continues the old version only where both versions mean the same tables: a sink whose
connector or location changed holds none of the old version's rows, so every window is written to
it from a full replay; a source whose location changed was never read by the old version, so it is
read from its startup mode, and the seam still holds at the sink.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.intervals import duration_ms
from stategate.analyzer.model import IntervalJoin, JobModel, Pipeline, TimeKind, Window, WindowAggregate, WindowJoin
from stategate.analyzer.windows import Session, format_ms

#: The job's own setting for how far a session window is replayed.
SESSION_CAP = "stategate.replay.session-cap"
DEFAULT_SESSION_CAP_MS = 3_600_000
#: The job's own setting for how much earlier than the cutoff a Kafka source starts, by record
#: timestamp, when the archived offsets no longer reach back that far.
KAFKA_MARGIN = "stategate.replay.kafka-margin"
DEFAULT_KAFKA_MARGIN_MS = 600_000
#: Flink's allowed lateness of the legacy group window operator.
ALLOW_LATENESS = "table.exec.emit.allow-lateness"
#: What a processing-time window's replay says (and how it is recognised).
PROCESSING_TIME = "processing-time windows cannot be replayed: windows open at the cutover start empty"
#: The options that say where a table's rows are: two versions with the same values read (or write)
#: the same rows. Format and reader options (``format``, ``spark.maxFilesPerTrigger``) do not.
LOCATION_OPTIONS = ("connector", "path", "topic", "topic-pattern", "properties.bootstrap.servers")


@dataclass(frozen=True)
class ReplayVolume:
    """What a bounded take-over would read again of the old version's input, beside a full replay
    (:func:`analyzer.cutover.volumes`, from the deployed checkpoint); or why it would be refused.

    :param files: files the old version read that a bounded take-over reads again
    :param bytes: their size
    :param full_files: files the old version read (that are still there): what a full replay reads again
    :param full_bytes: their size
    :param refused: why a bounded take-over cannot be honoured (then only full or none can run)
    :param messages: a Kafka source's messages the old version read that a bounded take-over reads
        again (its files and bytes are not counted)
    """

    files: int = 0
    bytes: int = 0
    full_files: int = 0
    full_bytes: int = 0
    refused: str = ""
    messages: int | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.refused:
            return {"refused": self.refused}
        if self.messages is not None:
            return {"messages": self.messages}
        return {"files": self.files, "bytes": self.bytes, "full_files": self.full_files,
                "full_bytes": self.full_bytes}

    def describe(self) -> str:
        if self.refused:
            return f"a bounded take-over would be refused: {self.refused}"
        if self.messages is not None:
            return (f"a bounded take-over re-reads {self.messages:,} messages the deployed version read from Kafka; "
                    "a full replay reads from the startup mode")
        return (f"a bounded take-over re-reads {self.files} of the {self.full_files} files the deployed version "
                f"read ({format_bytes(self.bytes)} of {format_bytes(self.full_bytes)}); a full replay reads them all")


@dataclass(frozen=True)
class Replay:
    """What a pipeline reads again after its state is cleared, and the rule at the seam.

    :param sink: the pipeline (its sink table, or ``select#N``)
    :param span_ms: how far before the cutover watermark it reads; None when no replay can rebuild
        its state (processing time, no window)
    :param note: what the span is made of, and what it cannot rebuild
    :param seam: which windows the new version emits, and how they meet the old version's
    :param processing_time: its windows run on the wall clock's time: nothing can be replayed into them
    :param volume: what it would read of the deployed version's input (with the deployed checkpoint)
    """

    sink: str
    span_ms: int | None
    note: str
    seam: str = ""
    processing_time: bool = False
    volume: ReplayVolume | None = None

    def to_dict(self) -> dict[str, Any]:
        found = {"sink": self.sink, "span_seconds": None if self.span_ms is None else self.span_ms / 1000,
                 "note": self.note, "seam": self.seam}
        return found | ({"volume": self.volume.to_dict()} if self.volume is not None else {})

    def describe(self) -> str:
        span = "no bounded replay" if self.span_ms is None else f"replays {format_ms(self.span_ms)}"
        return (f"{self.sink}: {span} ({self.note})" + (f"; {self.seam}" if self.seam else "")
                + (f"; {self.volume.describe()}" if self.volume is not None else ""))


def replays(old: JobModel | None, new: JobModel) -> tuple[Replay, ...]:
    """The replay of each pipeline of ``new``; with ``old``, also the rule at the seam."""
    return tuple(_replay(new, pipeline, old) for pipeline in new.pipelines)


def replay_span(model: JobModel, pipeline: Pipeline) -> Replay:
    """One pipeline's replay, without a seam (what the engine reads back at take-over)."""
    return _replay(model, pipeline, None)


def source_of(pipeline: Pipeline) -> str | None:
    """The one table a pipeline reads; None for a join (several) or a pipeline without a window."""
    if pipeline.join is None and pipeline.aggregate is not None:
        return pipeline.aggregate.source_table
    if pipeline.join is None and pipeline.topn is not None and pipeline.topn.rows is not None:
        return pipeline.topn.rows.source
    return None


def same_table(old: JobModel, new: JobModel, name: str | None) -> bool:
    """Whether ``name`` in both versions is the same rows: at the same location, or declared in
    neither (the name is all either version says)."""
    if name is None:
        return False
    before, after = old.tables.get(name), new.tables.get(name)
    if before is None or after is None:
        return before is after
    return all(_option(before.options, key) == _option(after.options, key) for key in LOCATION_OPTIONS)


def continued(old: JobModel, new: JobModel, pipeline: Pipeline) -> Pipeline | None:
    """The old version's pipeline that ``pipeline`` continues: the same sink, written where the old
    one wrote it. None when the old version wrote none of its rows (a full replay fills it)."""
    before = old.pipeline_named.get(pipeline.name)
    if before is None or (pipeline.sink is not None and not same_table(old, new, pipeline.sink)):
        return None
    return before


def format_bytes(size: int) -> str:
    """A size as people read it: 0 B, 512 B, 3.1 MB."""
    value, unit = float(size), "B"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            break
        value /= 1000
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"


def _option(options, key: str) -> str | None:
    value = options.get(key)
    return value.rstrip("/") if key == "path" and value else value


def _replay(model: JobModel, pipeline: Pipeline, old: JobModel | None) -> Replay:
    parts: list[str] = []
    span = _pipeline_span(model, pipeline, parts)
    if old is not None and continued(old, model, pipeline) is None:
        return Replay(pipeline.name, None, "; ".join(parts), "the old version wrote none of this sink's rows (a new "
                      "pipeline, or its sink's connector or location changed): a full replay writes every window")
    if span is None:
        return Replay(pipeline.name, None, "; ".join(parts), processing_time=PROCESSING_TIME in parts)
    return Replay(pipeline.name, span, "; ".join(parts), _seam(model, pipeline, old))


def _pipeline_span(model: JobModel, pipeline: Pipeline, parts: list[str]) -> int | None:
    join = pipeline.join
    if isinstance(join, WindowJoin):
        spans = [_chain_span(model, b.aggregate, parts) for b in join.branches]
        return None if None in spans else max(s for s in spans if s is not None)
    if isinstance(join, IntervalJoin):
        window = _chain_span(model, join.window.aggregate, parts)
        if window is None:
            return None
        parts.append(f"the interval join's range {format_ms(join.lower_ms)} before and "
                     f"{format_ms(join.upper_ms)} after")
        return window + join.lower_ms + join.upper_ms
    if pipeline.aggregate is not None:
        return _chain_span(model, pipeline.aggregate, parts)
    if pipeline.topn is not None and pipeline.topn.rows is not None:
        rows = pipeline.topn.rows
        return _with_delay(model, rows.source, _window_span(model, rows.window, parts), parts)
    parts.append("no window: the state it keeps has no time bound, so only a full replay rebuilds it")
    return None


def _chain_span(model: JobModel, aggregate: WindowAggregate, parts: list[str]) -> int | None:
    """A cascade of windows: a row counts in the outer window only after the inner one closes, so
    the spans add up."""
    total = 0
    for stage in aggregate.chain():
        if stage.window is None:
            continue  # aggregating whole windows of the stage below: no window of its own
        span = _window_span(model, stage.window, parts)
        if span is None:
            return None
        total += span
    return _with_delay(model, aggregate.source_table, total, parts)


def _window_span(model: JobModel, window: Window, parts: list[str]) -> int | None:
    if window.time_kind is TimeKind.PROCTIME:
        parts.append(PROCESSING_TIME)
        return None
    if isinstance(window.shape, Session):
        cap = _setting_ms(model, SESSION_CAP, DEFAULT_SESSION_CAP_MS)
        parts.append(f"SESSION windows are replayed {format_ms(cap)} ({SESSION_CAP}): a session open "
                     "longer than that loses its earliest rows")
        return cap
    span = window.shape.span_ms
    assert span is not None, "only SESSION windows have no span"
    parts.append(f"{window.kind} {format_ms(span)}")
    return span


def _with_delay(model: JobModel, source: str, span: int | None, parts: list[str]) -> int | None:
    if span is None:
        return None
    table = model.tables.get(source)
    delay = table.watermark_delay_ms if table is not None and table.watermark_delay_ms else 0
    if delay:
        parts.append(f"watermark delay {format_ms(delay)}")
    lateness = _setting_ms(model, ALLOW_LATENESS, 0)
    if lateness:
        parts.append(f"allowed lateness {format_ms(lateness)}")
    return span + delay + lateness


def kafka_margin_ms(model: JobModel) -> int:
    """How much earlier than the cutoff a Kafka source starts by record timestamp: a record's
    timestamp is the producer's or the broker's clock, which may run behind the event time."""
    return _setting_ms(model, KAFKA_MARGIN, DEFAULT_KAFKA_MARGIN_MS)


def _setting_ms(model: JobModel, key: str, default: int) -> int:
    if key not in model.settings:
        return default
    try:
        return duration_ms(model.settings[key])
    except SQLModelError as error:
        raise SQLModelError(f"SET '{key}': {error.message}", source=model.source) from None


def _seam(model: JobModel, new: Pipeline, old_model: JobModel | None) -> str:
    """Which windows the new version emits after a clear-state redeploy, and how they meet the old
    version's: windows ending after the cutover watermark W are the new version's alone."""
    rule = "the new version emits only windows ending after the cutover watermark W"
    old = continued(old_model, model, new) if old_model is not None else None
    if old_model is None or old is None:
        return rule
    if _windows(old) == _windows(new):
        rule += ": the window shape is unchanged, so the sink holds one row per key and window"
    else:
        rule += ("; the window shape changed, so new windows that start before W also count rows "
                 "the old version counted in its windows")
    source = source_of(new)
    if source is not None and (source_of(old) != source or not same_table(old_model, model, source)):
        rule += (f"; its source {source} is not what the old version read (another table, connector or location): "
                 "it is read from its startup mode")
    return rule


def _windows(pipeline: Pipeline) -> tuple:
    stages = pipeline.stages()
    if not stages and pipeline.topn is not None and pipeline.topn.rows is not None:
        window = pipeline.topn.rows.window
        return ((window.shape, window.time_attr.key),)
    return tuple((s.window.shape, s.window.time_attr.key) for s in stages if s.window is not None)

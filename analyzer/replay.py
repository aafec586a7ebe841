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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.intervals import duration_ms
from stategate.analyzer.model import IntervalJoin, JobModel, Pipeline, Window, WindowAggregate, WindowJoin
from stategate.analyzer.windows import Session, format_ms

#: The job's own setting for how far a session window is replayed.
SESSION_CAP = "stategate.replay.session-cap"
DEFAULT_SESSION_CAP_MS = 3_600_000
#: Flink's allowed lateness of the legacy group window operator.
ALLOW_LATENESS = "table.exec.emit.allow-lateness"


@dataclass(frozen=True)
class Replay:
    """What a pipeline reads again after its state is cleared, and the rule at the seam.

    :param sink: the pipeline (its sink table, or ``select#N``)
    :param span_ms: how far before the cutover watermark it reads; None when no replay can rebuild
        its state (processing time, no window)
    :param note: what the span is made of, and what it cannot rebuild
    :param seam: which windows the new version emits, and how they meet the old version's
    """

    sink: str
    span_ms: int | None
    note: str
    seam: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"sink": self.sink, "span_seconds": None if self.span_ms is None else self.span_ms / 1000,
                "note": self.note, "seam": self.seam}

    def describe(self) -> str:
        span = "no bounded replay" if self.span_ms is None else f"replays {format_ms(self.span_ms)}"
        return f"{self.sink}: {span} ({self.note})" + (f"; {self.seam}" if self.seam else "")


def replays(old: JobModel | None, new: JobModel) -> tuple[Replay, ...]:
    """The replay of each pipeline of ``new``; with ``old``, also the rule at the seam."""
    earlier = {p.name: p for p in old.pipelines} if old is not None else {}
    return tuple(_replay(new, pipeline, earlier.get(pipeline.name)) for pipeline in new.pipelines)


def replay_span(model: JobModel, pipeline: Pipeline) -> Replay:
    """One pipeline's replay, without a seam (what the engine reads back at take-over)."""
    return _replay(model, pipeline, None)


def _replay(model: JobModel, pipeline: Pipeline, old: Pipeline | None) -> Replay:
    parts: list[str] = []
    span = _pipeline_span(model, pipeline, parts)
    if span is None:
        return Replay(pipeline.name, None, "; ".join(parts))
    return Replay(pipeline.name, span, "; ".join(parts), _seam(pipeline, old))


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
    if window.time_kind == "proctime":
        parts.append("processing-time windows cannot be replayed: windows open at the cutover start empty")
        return None
    if isinstance(window.shape, Session):
        cap = _setting_ms(model, SESSION_CAP, DEFAULT_SESSION_CAP_MS)
        parts.append(f"SESSION windows are replayed {format_ms(cap)} ({SESSION_CAP}): a session open "
                     "longer than that loses its earliest rows")
        return cap
    parts.append(f"{window.kind} {format_ms(window.shape.span_ms)}")
    return window.shape.span_ms


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


def _setting_ms(model: JobModel, key: str, default: int) -> int:
    if key not in model.settings:
        return default
    try:
        return duration_ms(model.settings[key])
    except SQLModelError as error:
        raise SQLModelError(f"SET '{key}': {error.message}", source=model.source) from None


def _seam(new: Pipeline, old: Pipeline | None) -> str:
    """Which windows the new version emits after a clear-state redeploy, and how they meet the old
    version's: windows ending after the cutover watermark W are the new version's alone."""
    rule = "the new version emits only windows ending after the cutover watermark W"
    if old is None:
        return rule
    if _windows(old) == _windows(new):
        return rule + ": the window shape is unchanged, so the sink holds one row per key and window"
    return rule + ("; the window shape changed, so new windows that start before W also count rows "
                   "the old version counted in its windows")


def _windows(pipeline: Pipeline) -> tuple:
    stages = pipeline.stages()
    if not stages and pipeline.topn is not None and pipeline.topn.rows is not None:
        window = pipeline.topn.rows.window
        return ((window.shape, window.time_attr.key),)
    return tuple((s.window.shape, s.window.time_attr.key) for s in stages if s.window is not None)

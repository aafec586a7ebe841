"""Where a cleared version stopped, and what the version taking over reads again: from its checkpoint.

When a redeploy clears the state, the old version's checkpoint is archived, never written again. The
new version starts with an empty checkpoint of its own and, per pipeline, reads from the archive:

* the cutover watermark W: the watermark the old version's last committed batch ran with. Every
  window ending at or before W was emitted by the old version; none ending after it was.
* the files its source read, by the micro-batch that first read them (the source's own log numbers
  its entries, the offset log says how far each batch had read). After batch ``b`` Spark's watermark
  is at least (the latest event time in ``b``) - delay, so no row of a file first read in ``b`` is
  later than watermark(b + 1) + delay. A file whose bound is before ``W - span`` (the new version's
  replay span, :mod:`analyzer.replay`) holds no row of a window the new version will emit: it is
  never opened. Offset files Spark has pruned are bounded by the next watermark it kept: watermarks
  only rise, so the bound only loosens.

Only Spark's checkpoint files are read (:mod:`spark_jobs.checkpoint`), through any
:class:`~spark_jobs.checkpoint.CheckpointFiles`: the engine reads the archive this way at take-over
(through Hadoop), and ``stategate check --deployed`` and the Airflow gate read the deployed checkpoint
the same way before deploying, to say what a take-over would cost (:func:`volumes`). Nothing here
imports PySpark.

A Kafka source is bounded by the same reckoning, on offsets: the new version starts where the last
batch whose rows all precede ``W - span`` ended (the offset log says where), or, where Spark pruned
the log that far back, by record timestamp a margin earlier (:func:`_kafka_cutover`). A window
join keeps the seam but reads its sources whole (:func:`_join_cutover`; re-seeded, each source goes
on from where it stopped: :func:`carried_cutover`); an interval join is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from stategate.analyzer.build import build
from stategate.analyzer.layout import StageLayout
from stategate.analyzer.model import IntervalJoin, JobModel, Pipeline, WindowJoin
from stategate.analyzer.report import Report
from stategate.analyzer.replay import ReplayVolume, continued, kafka_margin_ms, replay_span, same_table, source_of
from stategate.spark_jobs.checkpoint import (JOB_SQL, Checkpoint, CheckpointFiles, PlannedBatch, QueryLog,
                                             SourceLogError, input_sources)

#: The replay policies: re-read what open windows need, everything, or nothing the old version read.
BOUNDED, FULL, NONE = "bounded", "full", "none"
REPLAY_POLICIES = (BOUNDED, FULL, NONE)


#: The files of one source, each (path, modification time) as the source's log names it.
Files = tuple[tuple[str, int], ...]
#: In a recorded cutover: the files each input source skips.
SKIPPED = "skipped_by_source"


class TakeOverRefused(RuntimeError):
    """A bounded take-over cannot be honoured; nothing was read or changed."""


@dataclass(frozen=True)
class Cutover:
    """Where the old version of one pipeline stopped, and what the new version reads again.

    :param watermark_ms: W, the watermark of the old version's last committed batch; None when the
        pipeline's windows run on processing time (nothing to replay, nothing emitted twice)
    :param cutoff_ms: ``W - span``: rows before it feed no window the new version emits
    :param skipped: per input source (one but in a window join, :func:`checkpoint.input_sources`),
        the old version's files the new version never opens: (path, modification time) as the
        source's log names them
    :param replayed: how many of the old version's files (Kafka: messages) are read again
    :param read: how many files the old version read
    :param new_source: the old version never read the pipeline's source (another table, connector or
        location): it is read from its startup mode
    :param joined: a window join: its sources are read from their startup modes, the seam kept
        (re-seeded, each goes on from where it stopped instead: ``skipped``)
    :param kafka: the source is a Kafka topic: where it starts is ``source_options``
    :param source_options: Spark's ``startingOffsets`` or ``startingOffsetsByTimestamp``; none: the
        table's startup mode
    """

    pipeline: str
    watermark_ms: int | None
    cutoff_ms: int | None
    skipped: tuple[Files, ...]
    replayed: int
    read: int
    new_source: bool = False
    joined: bool = False
    kafka: bool = False
    source_options: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"watermark_ms": self.watermark_ms, "cutoff_ms": self.cutoff_ms, "replayed_files": self.replayed,
                "archived_files": self.read,
                SKIPPED: [[list(file) for file in files] for files in self.skipped],
                "new_source": self.new_source, "joined": self.joined, "kafka": self.kafka, "source_options": dict(self.source_options)}

    @classmethod
    def from_dict(cls, pipeline: str, data: dict[str, Any]) -> Cutover:
        # Recorded before a window join could re-seed: the files of the pipeline's one source.
        skipped = data[SKIPPED] if SKIPPED in data else [data["skipped"]]
        return cls(pipeline, data["watermark_ms"], data["cutoff_ms"],
                   tuple(tuple((path, int(mtime)) for path, mtime in files) for files in skipped), data["replayed_files"],
                   data["archived_files"], data["new_source"], data["joined"], data["kafka"],
                   tuple(data["source_options"].items()))

    def skipped_by(self, source: int) -> Files:
        """The files the input source ``source`` (in branch order) never opens."""
        return self.skipped[source] if source < len(self.skipped) else ()

    def describe(self) -> str:
        rows = "" if self.cutoff_ms is None else f", rows from {self.cutoff_ms} ms on"
        seam = "" if self.watermark_ms is None else \
            f"; emits windows ending after the cutover watermark {self.watermark_ms} ms"
        if self.joined and self.skipped:
            return (f"{self.pipeline}: a window join: each source goes on from where it stopped, skipping the "
                    f"{self.read} files they read{seam}")
        if self.joined:
            return (f"{self.pipeline}: a window join: its sources are read from their startup modes (Spark's one "
                    f"watermark, the minimum of theirs, bounds no single source's input){rows}{seam}")
        if self.new_source:
            return (f"{self.pipeline}: its source is not what the old version read, so it is read from its "
                    f"startup mode{rows}{seam}")
        if self.kafka:
            start = ("from its startup mode" if not self.source_options else
                     f"with {', '.join(f'{key}={value}' for key, value in self.source_options)}")
            counted = f" (re-reads {self.replayed} messages the old version read)" if self.replayed else ""
            return f"{self.pipeline}: its Kafka source starts {start}{counted}{rows}{seam}"
        if self.watermark_ms is None:
            return (f"{self.pipeline}: processing-time windows, nothing replayed; {self.read - self.replayed} files "
                    "the old version read are skipped and windows open at the cutover start empty")
        if self.cutoff_ms is None:
            return (f"{self.pipeline}: no replay (--replay none): skips the {self.read} files the old version read; "
                    f"emits windows ending after the cutover watermark {self.watermark_ms} ms")
        return (f"{self.pipeline}: cutover watermark {self.watermark_ms} ms; re-reads {self.replayed} of the "
                f"{self.read} files the old version read (rows from {self.cutoff_ms} ms on), then the files it "
                "never read; emits windows ending after the cutover watermark")


@dataclass(frozen=True)
class TakeOver:
    """A fresh checkpoint's take-over, as recorded beside its state before its first batch: every
    later start of the checkpoint (a restart after a crash, a retried task) applies the same
    cutovers, so it never emits a window the archived version emitted, nor reads what the take-over
    skipped.

    :param archived: the archived checkpoint taken over from (None: a restored checkpoint that took
        over from none, whose cutovers keep the seam with the version that replaced it for a while)
    :param replay: the replay policy it ran with
    :param cutovers: each pipeline's cutover, by name
    """

    archived: str | None
    replay: str
    cutovers: dict[str, Cutover]

    def to_dict(self) -> dict[str, Any]:
        return {"archived": self.archived, "replay": self.replay,
                "pipelines": {name: cutover.to_dict() for name, cutover in self.cutovers.items()}}

    @classmethod
    def recorded(cls, checkpoint: Checkpoint) -> TakeOver | None:
        """The take-over ``checkpoint`` started with; None if it took over from none."""
        data = checkpoint.take_over()
        if data is None:
            return None
        return cls(data["archived"], data["replay"],
                   {name: Cutover.from_dict(name, cut) for name, cut in data["pipelines"].items()})


def cutovers(storage: CheckpointFiles, archived: str, model: JobModel, policy: str = BOUNDED) -> dict[str, Cutover]:
    """The cutover of every pipeline of ``model`` that continues one the archived version ran (the
    same sink at the same location, :func:`analyzer.replay.continued`), by name. Any other pipeline
    has none: the old version wrote none of its rows, so it reads its sources from their startup mode."""
    old = _old_model(storage, archived)
    found = {}
    for pipeline in model.pipelines:
        before = continued(old, model, pipeline)
        if before is None:
            continue
        found[pipeline.name] = _plan(storage, Checkpoint(storage, archived).query(pipeline.name), model, pipeline,
                                     _delay(old, before), policy,
                                     _same_source(old, model, before, pipeline))[0]
    return found


def seam(storage: CheckpointFiles, replaced: str, model: JobModel) -> dict[str, Cutover]:
    """Where a restored checkpoint takes over again from the version that replaced it (a rollback):
    each pipeline of ``model`` that continues one the replacing version ran (its checkpoint,
    ``replaced``, read only) emits only windows ending after that version's last committed
    watermark, which it emitted. Its state goes on from its own checkpoint: nothing is skipped or
    cut, only the seam is kept. A pipeline the replacing version never committed a batch of has none."""
    old = _old_model(storage, replaced)
    found = {}
    for pipeline in model.pipelines:
        if continued(old, model, pipeline) is None:
            continue
        query = Checkpoint(storage, replaced).query(pipeline.name)
        committed = query.committed()
        watermark = query.watermark(committed[-1]) if committed else None
        if watermark is not None:
            found[pipeline.name] = Cutover(pipeline.name, watermark, None, (), 0, 0)
    return found


def volumes(storage: CheckpointFiles, checkpoint: str, model: JobModel) -> dict[str, ReplayVolume]:
    """What a bounded take-over from ``checkpoint`` would read of the old version's input, beside a
    full replay, for each pipeline with a cutover (by name); where a bounded take-over would be
    refused, why. Read only: this is the cost the gate and ``stategate check --deployed`` show."""
    try:
        old = _old_model(storage, checkpoint)
    except TakeOverRefused as error:
        return {p.name: ReplayVolume(refused=str(error)) for p in model.pipelines}
    found = {}
    for pipeline in model.pipelines:
        before = continued(old, model, pipeline)
        if before is None or (pipeline.join is None and not _same_source(old, model, before, pipeline)):
            continue  # the old version read none of what this one reads: nothing to count
        try:
            cut, files = _plan(storage, Checkpoint(storage, checkpoint).query(pipeline.name), model, pipeline,
                               _delay(old, before))
        except TakeOverRefused as error:
            found[pipeline.name] = ReplayVolume(refused=str(error))
            continue
        if cut.joined:
            continue  # its sources are read from their startup modes, as a full replay reads them
        if cut.kafka:
            if dict(cut.source_options).get("startingOffsets"):  # countable: from offsets the archive holds
                found[pipeline.name] = ReplayVolume(messages=cut.replayed)
            continue
        sizes = {path: storage.size(path) for path in files if storage.exists(path)}
        skipped = {path for path, _ in cut.skipped_by(0)}
        replayed = [path for path in files if path not in skipped]
        found[pipeline.name] = ReplayVolume(len(replayed), sum(sizes[p] for p in replayed),
                                            len(sizes), sum(sizes.values()))
    return found


def with_volumes(report: Report, storage: CheckpointFiles, checkpoint: str, model: JobModel) -> Report:
    """``report`` with each pipeline's replay carrying what a take-over from ``checkpoint`` would read."""
    found = volumes(storage, checkpoint, model)
    return replace(report, replay=tuple(replace(r, volume=found[r.sink]) if r.sink in found else r
                                        for r in report.replay))


def _old_model(storage: CheckpointFiles, checkpoint: str) -> JobModel:
    archived = Checkpoint(storage, checkpoint)
    sql = archived.recorded_sql()
    if sql is None:
        raise TakeOverRefused(f"take-over: {archived.record_path(JOB_SQL)} is missing, so the SQL that built the "
                              "checkpoint is unknown; nothing was read or changed. Choose --replay full")
    return build(sql, source=archived.record_path(JOB_SQL))


def _same_source(old: JobModel, new: JobModel, before: Pipeline, pipeline: Pipeline) -> bool:
    source = source_of(pipeline)
    return source is not None and source_of(before) == source and same_table(old, new, source)


def _delay(model: JobModel, pipeline: Pipeline) -> int:
    """The watermark delay the pipeline's source ran with."""
    table = model.tables.get(source_of(pipeline) or "")
    return (table.watermark_delay_ms or 0) if table is not None else 0


def carried_cutover(storage: CheckpointFiles, query: QueryLog, old: JobModel, layouts: Sequence[StageLayout],
                    model: JobModel, pipeline: Pipeline) -> Cutover:
    """The cutover of a re-seeded pipeline (:mod:`spark_jobs.reseed`) from its old ``query``, built
    by ``old`` with ``layouts``: its state is carried, so nothing the old query read is read again,
    and only windows ending after its watermark are emitted. Each source of a window join goes on
    from where it stopped, by its own log."""
    before = continued(old, model, pipeline)
    assert before is not None, "a re-seeded pipeline continues the old version's"
    if not isinstance(pipeline.join, WindowJoin):
        return _plan(storage, query, model, pipeline, _delay(old, before), NONE)[0]
    last = query.committed()[-1]
    planned = query.batch(last)
    assert planned is not None and planned.watermark_ms is not None, "a re-seed reads a committed batch"
    skipped = []
    for source in input_sources(before, layouts):
        up_to = planned.file_log_offset(source)
        files = {} if up_to is None else _file_log(query, query.source_log(source), up_to, pipeline.name)
        skipped.append(_entries(files))
    return Cutover(pipeline.name, planned.watermark_ms, None, tuple(skipped), 0, sum(map(len, skipped)), joined=True)


def _plan(storage: CheckpointFiles, query: QueryLog, model: JobModel, pipeline: Pipeline, old_delay_ms: int,
          policy: str = BOUNDED, same_source: bool = True) -> tuple[Cutover, dict[str, tuple[int, int]]]:
    """The cutover of ``pipeline`` from its ``query`` in an archived checkpoint (read only), and
    every file the old version read (by the entry of its source's log).
    ``old_delay_ms`` is the watermark delay the old version ran with: it bounds its files. Without
    ``same_source`` the old version never read the pipeline's source: it is read from its startup
    mode, and only the seam (windows ending after W) is taken over."""
    location = query.location
    batches = query.committed()
    if not batches:
        raise TakeOverRefused(f"take-over of {pipeline.name}: {location} has no committed batch; start with a full "
                              "replay (--replay full)")
    last = batches[-1]
    logs = query.planned_batches(last)
    watermarks = {n: planned.watermark_ms for n, planned in logs.items()}
    if watermarks.get(last) is None:
        raise TakeOverRefused(f"take-over of {pipeline.name}: the offset log of batch {last} in {location} has no "
                              "watermark; start with a full replay (--replay full)")
    replay = replay_span(model, pipeline)
    w = None if replay.processing_time else watermarks[last]
    if pipeline.join is not None:
        return _join_cutover(pipeline, w, replay.span_ms, policy), {}
    if not same_source:
        cutoff = None if w is None or replay.span_ms is None else w - replay.span_ms
        return Cutover(pipeline.name, w, cutoff, (), 0, 0, new_source=True), {}
    if replay.span_ms is None and w is not None and policy != NONE:
        raise TakeOverRefused(f"take-over of {pipeline.name}: {replay.note}; choose --replay full")
    cutoff = None if w is None or policy == NONE or replay.span_ms is None else w - replay.span_ms
    kept = [n for n in sorted(watermarks) if n > 0]

    def skippable(batch: int) -> bool:
        """After batch ``b`` the watermark is at least (its latest event time) - delay, so none of
        its rows is later than the next watermark Spark kept + delay: before the cutoff, no row of
        ``b`` feeds a window the new version emits."""
        after = next((watermarks[n] for n in kept if n > batch), None)
        return cutoff is not None and batch < last and after is not None and after + old_delay_ms < cutoff

    read_up_to = {n: planned.file_log_offset() for n, planned in sorted(logs.items())}
    up_to = read_up_to[last]
    if up_to is None:
        return _kafka_cutover(model, pipeline, w, cutoff, logs, last, skippable, location), {}
    files = _file_log(query, query.source_log(0), up_to, pipeline.name)
    skipped = []
    for path, (entry, _) in files.items():
        # The micro-batch that first read the file: the first whose offset reached its log entry
        # (the earliest batch Spark kept, if it pruned the one that read it: a looser bound).
        batch = next(n for n, offset in read_up_to.items() if offset is not None and offset >= entry)
        if cutoff is None or skippable(batch):
            skipped.append(path)
        elif not storage.exists(path):
            raise TakeOverRefused(f"take-over of {pipeline.name}: {path}, which the replay must read again, is gone "
                                  "(the source's retention is shorter than the replay span); nothing was changed. "
                                  "Choose --replay none to skip what the old version read")
    return (Cutover(pipeline.name, w, cutoff, (_entries({path: files[path] for path in skipped}),),
                    len(files) - len(skipped), len(files)), files)


def _join_cutover(pipeline: Pipeline, w: int | None, span_ms: int | None, policy: str) -> Cutover:
    """A window join reads several sources, and Spark keeps one watermark, the minimum of theirs: it
    bounds no single source's input, so each source is read from its startup mode. The seam holds
    all the same: rows before ``W - span`` (with ``--replay none``, before W) are dropped and only
    windows ending after W are emitted. An interval join's rows have no window to hold a seam by:
    it is refused."""
    if isinstance(pipeline.join, IntervalJoin):
        raise TakeOverRefused(f"take-over of {pipeline.name}: an interval join has no window end to hold the seam "
                              "by; choose --replay full")
    cutoff = None if w is None else w if policy == NONE else None if span_ms is None else w - span_ms
    return Cutover(pipeline.name, w, cutoff, (), 0, 0, joined=True)


def _kafka_cutover(model: JobModel, pipeline: Pipeline, w: int | None, cutoff: int | None,
                   logs: dict[int, PlannedBatch], last: int, skippable: Callable[[int], bool], location: str) -> Cutover:
    """Where the new version's Kafka source starts. Without a cutoff (processing time, or the
    operator's ``none``): at the offsets the old version had read, so nothing is read twice. With
    one: at the end of the last batch whose rows all precede the cutoff (the offset log still holds
    it: exact, and Spark fails the query rather than skip offsets the topic no longer retains);
    else, where Spark pruned that far back, by record timestamp: a record's timestamp is the
    producer's or the broker's clock, not the event time, so it starts a margin earlier
    (``stategate.replay.kafka-margin``) and drops rows before the cutoff by event time. Offsets are
    given for every partition the old version read: a partition added since fails the start."""
    offsets = {n: read for n, planned in logs.items() if (read := planned.kafka_offsets()) is not None}
    latest = offsets.get(last)
    if latest is None:
        raise TakeOverRefused(f"take-over of {pipeline.name}: the offset log of batch {last} in {location} is "
                              "neither a file source's nor a Kafka source's; choose --replay full")
    if cutoff is None:
        return Cutover(pipeline.name, w, None, (), 0, 0, kafka=True, source_options=_starting(latest))
    before = [n for n in sorted(offsets) if skippable(n)]
    if before:
        start = offsets[before[-1]]
        replayed = sum(offset - start.get(topic, {}).get(partition, 0)
                       for topic, partitions in latest.items() for partition, offset in partitions.items())
        return Cutover(pipeline.name, w, cutoff, (), replayed, 0, kafka=True, source_options=_starting(start))
    if min(logs) == 0:  # nothing precedes the cutoff: everything from the startup mode
        return Cutover(pipeline.name, w, cutoff, (), 0, 0, kafka=True)
    since = cutoff - kafka_margin_ms(model)
    by_time = {topic: {partition: since for partition in partitions} for topic, partitions in latest.items()}
    return Cutover(pipeline.name, w, cutoff, (), 0, 0, kafka=True, source_options=(
        ("startingOffsetsByTimestamp", json.dumps(by_time, sort_keys=True)),
        ("startingOffsetsByTimestampStrategy", "error")))


def _starting(offsets: dict[str, dict[str, int]]) -> tuple[tuple[str, str], ...]:
    return (("startingOffsets", json.dumps(offsets, sort_keys=True)),)


def _file_log(query: QueryLog, source: str, up_to: int, pipeline: str) -> dict[str, tuple[int, int]]:
    """Each file the source read (up to its log entry ``up_to``): the entry that lists it and its
    modification time. The log numbers its entries itself: only batches that found new files add
    one, so an entry is not a micro-batch number (the offset log maps one to the other)."""
    try:
        return query.source_files(source, up_to)
    except SourceLogError as error:
        raise TakeOverRefused(f"take-over of {pipeline}: {error} (a Kafka source cannot be bounded here yet); "
                              "choose --replay full") from None


def _entries(files: dict[str, tuple[int, int]]) -> tuple[tuple[str, int], ...]:
    """(path, modification time) of each file, in the source log's order (oldest entry first)."""
    return tuple((path, mtime) for path, (_, mtime) in sorted(files.items(), key=lambda item: item[1]))

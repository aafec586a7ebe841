"""Taking over from an archived checkpoint: the new version reads again only what its open windows need.

When a redeploy clears the state, the old version's checkpoint is archived, never written again. The
new version starts with an empty checkpoint of its own and, per pipeline, reads from the archive:

* the cutover watermark W: the watermark the old version's last committed batch ran with. Every
  window ending at or before W was emitted by the old version; none ending after it was.
* the files its source read, by the micro-batch that first read them (the source's own log numbers
  its entries, the offset log says how far each batch had read). After batch ``b`` Spark's watermark
  is at least (the latest event time in ``b``) - delay, so no row of a file first read in ``b`` is
  later than watermark(b + 1) + delay. A file whose bound is before ``W - span`` (the new version's
  replay span, :mod:`analyzer.replay`) holds no row of a window the new version will emit: it is
  never opened (Spark prunes files on ``_metadata.file_path``). Offset files Spark has pruned are
  bounded by the next watermark it kept: watermarks only rise, so the bound only loosens.

The new version then emits only windows ending after W, so the sink holds each window once across
the redeploy, and drops rows older than ``W - span`` that a re-read file still holds. Files the old
version never read are read as any new file is. Sources other than files (Kafka) and pipelines with
more than one source (joins) cannot be bounded this way yet: they are refused by name, and the
operator chooses a full replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from stategate.analyzer.build import build
from stategate.analyzer.layout import watermark_of_offset_log
from stategate.analyzer.model import JobModel, Pipeline
from stategate.analyzer.replay import continued, replay_span, same_table, source_of
from stategate.spark_jobs import RECORD_DIR
from stategate.spark_jobs.guard import CheckpointRefused, query_dir
from stategate.spark_jobs.storage import HadoopStorage

#: The record of a take-over beside the new checkpoint's state (``_stategate/take-over.json``).
RECORD = "take-over.json"
#: The replay policies: re-read what open windows need, everything, or nothing the old version read.
BOUNDED, FULL, NONE = "bounded", "full", "none"
REPLAY_POLICIES = (BOUNDED, FULL, NONE)


class TakeOverRefused(CheckpointRefused):
    """A bounded take-over cannot be honoured; nothing was read or changed."""


@dataclass(frozen=True)
class Cutover:
    """Where the old version of one pipeline stopped, and what the new version reads again.

    :param watermark_ms: W, the watermark of the old version's last committed batch; None when the
        pipeline's windows run on processing time (nothing to replay, nothing emitted twice)
    :param cutoff_ms: ``W - span``: rows before it feed no window the new version emits
    :param skipped: the old version's files the new version never opens, in both spellings Hadoop
        gives a local path (``file:/x`` in ``_metadata``, ``file:///x`` in the source log)
    :param replayed: how many of the old version's files are read again
    :param read: how many files the old version read
    :param new_source: the old version never read the pipeline's source (another table, connector or
        location): it is read from its startup mode
    """

    pipeline: str
    watermark_ms: int | None
    cutoff_ms: int | None
    skipped: frozenset[str]
    replayed: int
    read: int
    new_source: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"watermark_ms": self.watermark_ms, "cutoff_ms": self.cutoff_ms, "replayed_files": self.replayed,
                "archived_files": self.read, "skipped": sorted(self.skipped), "new_source": self.new_source}

    @classmethod
    def from_dict(cls, pipeline: str, data: dict[str, Any]) -> Cutover:
        return cls(pipeline, data["watermark_ms"], data["cutoff_ms"], frozenset(data["skipped"]),
                   data["replayed_files"], data["archived_files"], data["new_source"])

    def files(self) -> Column | None:
        """The source filter: None when every file is read."""
        return ~F.col("_metadata.file_path").isin(sorted(self.skipped)) if self.skipped else None

    def describe(self) -> str:
        if self.new_source:
            rows = "" if self.cutoff_ms is None else f" (rows from {self.cutoff_ms} ms on)"
            seam = ("" if self.watermark_ms is None else
                    f"; emits windows ending after the cutover watermark {self.watermark_ms} ms")
            return (f"{self.pipeline}: its source is not what the old version read, so it is read from its "
                    f"startup mode{rows}{seam}")
        if self.watermark_ms is None:
            return (f"{self.pipeline}: processing-time windows, nothing replayed; {self.read - self.replayed} files "
                    "the old version read are skipped and windows open at the cutover start empty")
        if self.cutoff_ms is None:
            return (f"{self.pipeline}: no replay (--replay none): skips the {self.read} files the old version read; "
                    f"emits windows ending after the cutover watermark {self.watermark_ms} ms")
        return (f"{self.pipeline}: cutover watermark {self.watermark_ms} ms; re-reads {self.replayed} of the "
                f"{self.read} files the old version read (rows from {self.cutoff_ms} ms on), then the files it "
                "never read; emits windows ending after the cutover watermark")


def record(storage: HadoopStorage, checkpoint: str, archived: str, policy: str, taken: dict[str, Cutover]) -> None:
    """Keep the take-over beside the new state, before its first batch: every later start of this
    checkpoint (a restart after a crash, a retried task) applies the same cutover, so it never
    emits a window the archived version emitted, nor reads what the take-over skipped."""
    storage.write_text(f"{checkpoint}/{RECORD_DIR}/{RECORD}", json.dumps({
        "archived": archived, "replay": policy,
        "pipelines": {name: cutover.to_dict() for name, cutover in taken.items()}}, indent=2))


def recorded(storage: HadoopStorage, checkpoint: str) -> tuple[str | None, dict[str, Cutover]]:
    """The archive this checkpoint took over from and its cutovers; (None, {}) if it took over from none."""
    path = f"{checkpoint}/{RECORD_DIR}/{RECORD}"
    if not storage.exists(path):
        return None, {}
    data = json.loads(storage.read_text(path))
    return data["archived"], {name: Cutover.from_dict(name, cut) for name, cut in data["pipelines"].items()}


def cutovers(storage: HadoopStorage, archived: str, model: JobModel, policy: str = BOUNDED) -> dict[str, Cutover]:
    """The cutover of every pipeline of ``model`` that continues one the archived version ran (the
    same sink at the same location, :func:`analyzer.replay.continued`), by name. Any other pipeline
    has none: the old version wrote none of its rows, so it reads its sources from their startup mode."""
    record = f"{archived.rstrip('/')}/{RECORD_DIR}/job.sql"
    if not storage.exists(record):
        raise TakeOverRefused(f"take-over: {record} is missing, so the archived checkpoint's SQL is unknown; "
                              "nothing was read or changed. Choose --replay full")
    old = build(storage.read_text(record), source=record)
    found = {}
    for pipeline in model.pipelines:
        before = continued(old, model, pipeline)
        if before is None:
            continue
        source = source_of(pipeline)
        same_source = source is not None and source_of(before) == source and same_table(old, model, source)
        found[pipeline.name] = cutover(storage, archived, model, pipeline, _delay(old, before), policy, same_source)
    return found


def _delay(model: JobModel, pipeline: Pipeline) -> int:
    """The watermark delay the pipeline's source ran with."""
    table = model.tables.get(source_of(pipeline) or "")
    return (table.watermark_delay_ms or 0) if table is not None else 0


def cutover(storage: HadoopStorage, archived: str, model: JobModel, pipeline: Pipeline, old_delay_ms: int,
            policy: str = BOUNDED, same_source: bool = True) -> Cutover:
    """The cutover of ``pipeline`` from its query in the archived checkpoint ``archived`` (read only).
    ``old_delay_ms`` is the watermark delay the old version ran with: it bounds its files. Without
    ``same_source`` the old version never read the pipeline's source: it is read from its startup
    mode, and only the seam (windows ending after W) is taken over."""
    location = query_dir(archived, pipeline.name)
    batches = _numbered(storage, f"{location}/commits")
    if not batches:
        raise TakeOverRefused(f"take-over of {pipeline.name}: {location} has no committed batch; start with a full "
                              "replay (--replay full)")
    last = max(batches)
    logs = {n: storage.read_text(f"{location}/offsets/{n}") for n in _numbered(storage, f"{location}/offsets")
            if n <= last}
    watermarks = {n: watermark_of_offset_log(text) for n, text in logs.items()}
    if watermarks.get(last) is None:
        raise TakeOverRefused(f"take-over of {pipeline.name}: the offset log of batch {last} in {location} has no "
                              "watermark; start with a full replay (--replay full)")
    replay = replay_span(model, pipeline)
    w = None if replay.processing_time else watermarks[last]
    if not same_source:
        cutoff = None if w is None or replay.span_ms is None else w - replay.span_ms
        return Cutover(pipeline.name, w, cutoff, frozenset(), 0, 0, new_source=True)
    sources = storage.list(f"{location}/sources")
    if len(sources) != 1:
        raise TakeOverRefused(f"take-over of {pipeline.name}: a bounded replay reads one source per pipeline, this "
                              f"one read {len(sources)}; choose --replay full or --replay none")
    read_up_to = {n: _log_offset(text) for n, text in sorted(logs.items())}
    if read_up_to[last] is None:
        raise TakeOverRefused(f"take-over of {pipeline.name}: the offset log of batch {last} in {location} is not a "
                              "file source's (a Kafka source cannot be bounded here yet); choose --replay full")
    files = _file_log(storage, sources[0], read_up_to[last], pipeline.name)
    if w is None:
        return Cutover(pipeline.name, None, None, _spellings(files), 0, len(files))
    if policy == NONE:  # the operator's choice: nothing the old version read, no window twice
        return Cutover(pipeline.name, w, None, _spellings(files), 0, len(files))
    if replay.span_ms is None:
        raise TakeOverRefused(f"take-over of {pipeline.name}: {replay.note}; choose --replay full")
    cutoff = w - replay.span_ms
    kept = [n for n in sorted(watermarks) if n > 0]
    skipped = []
    for path, entry in files.items():
        # The micro-batch that first read the file: the first whose offset reached its log entry
        # (the earliest batch Spark kept, if it pruned the one that read it: a looser bound).
        batch = next(n for n, offset in read_up_to.items() if offset is not None and offset >= entry)
        after = next((watermarks[n] for n in kept if n > batch), None)  # the next watermark Spark kept
        if batch < last and after is not None and after + old_delay_ms < cutoff:
            skipped.append(path)
        elif not storage.exists(path):
            raise TakeOverRefused(f"take-over of {pipeline.name}: {path}, which the replay must read again, is gone "
                                  "(the source's retention is shorter than the replay span); nothing was changed. "
                                  "Choose --replay none to skip what the old version read")
    return Cutover(pipeline.name, w, cutoff, _spellings(skipped), len(files) - len(skipped), len(files))


def _numbered(storage: HadoopStorage, folder: str) -> list[int]:
    names = (p.rsplit("/", 1)[-1] for p in storage.list(folder))
    return [int(name) for name in names if name.isdigit()]


def _log_offset(text: str) -> int | None:
    """How far in its own log a file source had read when a batch ran: the source's line of one
    ``offsets/`` file (``v1``, the batch metadata, then ``{"logOffset": n}``)."""
    lines = text.splitlines()
    try:
        return int(json.loads(lines[2])["logOffset"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def _file_log(storage: HadoopStorage, folder: str, up_to: int, pipeline: str) -> dict[str, int]:
    """Each file the source read, by the entry of the source's own log that lists it, up to entry
    ``up_to`` (Spark's file source log: one JSON line per file after ``v1``; ``<n>.compact`` files
    hold the earlier ones). The log numbers its entries itself: only batches that found new files
    add one, so an entry is not a micro-batch number (the offset log maps one to the other)."""
    found: dict[str, int] = {}
    for entry in storage.list(folder):
        name = entry.rsplit("/", 1)[-1]
        if not name.removesuffix(".compact").isdigit():
            continue
        lines = storage.read_text(entry).splitlines()
        for line in lines[1:]:
            try:
                record = json.loads(line)
                path, entry = record["path"], int(record["batchId"])
            except (ValueError, KeyError, TypeError):
                raise TakeOverRefused(f"take-over of {pipeline}: {entry} is not a file source's log (a Kafka "
                                      "source cannot be bounded here yet); choose --replay full") from None
            if entry <= up_to:
                found[path] = min(entry, found.get(path, entry))
    return found


def _spellings(paths) -> frozenset[str]:
    """Hadoop writes a local file ``file:///x`` in the source log and ``file:/x`` in ``_metadata``."""
    spelled = set()
    for path in paths:
        spelled.add(path)
        if path.startswith("file:///"):
            spelled.add("file:/" + path[len("file:///"):])
    return frozenset(spelled)

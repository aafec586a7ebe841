"""A job's checkpoint on disk: Spark's own logs and the record stategate keeps beside them.

::

    <checkpoint>/<query>/offsets/<batch>      a planned micro-batch: its watermark, its time, each source's offset
    <checkpoint>/<query>/commits/<batch>      a committed micro-batch
    <checkpoint>/<query>/sources/<n>/<entry>  a file source's own log: the files it read, by entry
    <checkpoint>/<query>/state/               the state store (Spark's alone)
    <checkpoint>/<query>/stategate-reseed/    a re-seeded query's carried state: a source after its input (``spark_jobs.reseed``)
    <checkpoint>/<query>/stategate-reseed-<n>/  that of the n-th window upstream in a cascade
    <checkpoint>/_stategate/job.sql           the SQL the state was built by
    <checkpoint>/_stategate/signature.json    the state it implies (``analyzer.signature``)
    <checkpoint>/_stategate/take-over.json    the archive a fresh checkpoint took over from
    <checkpoint>/_stategate/running.json      the application running on it (its driver's heartbeat)
    <checkpoint>/_stategate/stop.json         a request that it stop, from wherever it is asked
    <checkpoint>/_stategate/reseed.json       a re-seed under way (then moved into its archive)
    <checkpoint>/_stategate/reseeded/<when>/  the queries a re-seed replaced, read only, with their record

One query per pipeline, in a directory named after it (:func:`query_dir`). Every reader of these
files reads them here: the job through Hadoop (``spark_jobs.storage.HadoopStorage``), the Airflow
gate and ``stategate check --deployed`` through the job root (``provider.deployment.checkpoint``).
So this module imports no PySpark: it reads and writes through a :class:`CheckpointFiles`, by the
URIs Spark wrote.

Spark's log files are a version line (``v1``) and JSON: an offset file has the batch's metadata on
its second line (``batchWatermarkMs``, ``batchTimestampMs``, and ``conf``: the settings Spark fixes for
the checkpoint's life, among them its number of state partitions and its state store) and then one
line per source (a file source's ``{"logOffset": n}``, a Kafka source's
``{"topic": {"partition": offset}}``); a commit file has ``nextBatchWatermarkMs`` on its second
line (where the batch's input moved the watermark: the next batch evicts with it); a file source's
log has one JSON line per file read (``path``, ``timestamp``, ``batchId``, which is the log's own
entry number, not a micro-batch), with ``<n>.compact`` files holding the earlier entries.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Mapping, Protocol, Sequence

from stategate.analyzer.layout import StageLayout
from stategate.analyzer.model import Pipeline, WindowJoin
from stategate.analyzer.report import Carried
from stategate.analyzer.settings import SHUFFLE_PARTITIONS, STATE_STORE

#: Beside Spark's files in every checkpoint: stategate's own record.
RECORD_DIR = "_stategate"
#: The record's files: the SQL the state was built by, the state layout it implies, and the
#: archive a fresh checkpoint took over from; the application running on it, and a stop request.
JOB_SQL, SIGNATURE, TAKE_OVER = "job.sql", "signature.json", "take-over.json"
RUNNING, STOP = "running.json", "stop.json"
#: A re-seed: its record while under way, where it archives the queries it replaces (in the
#: record's directory), and the carried state in the new query's directory.
RESEED_PENDING, RESEEDED, RESEED = "reseed.json", "reseeded", "stategate-reseed"


def carried_dir(location: str, stage: int) -> str:
    """Where the re-seeded query at ``location`` keeps the carried state of the window aggregation
    at ``stage`` in ``Pipeline.stages`` (0: the outermost, the only one but in a cascade, a join or
    under an aggregation of whole windows)."""
    return f"{location}/{RESEED}" + (f"-{stage}" if stage else "")


def stateful_operators(pipeline: Pipeline) -> list[int | None]:
    """The number Spark gives each stage's stateful operator, in ``Pipeline.stages`` order; None
    for an aggregation of whole windows, which runs per micro-batch and keeps no state. Spark
    numbers them as they come in its plan, depth first (:func:`input_sources`), so each windowed
    stage takes the next number."""
    numbers: list[int | None] = []
    for stage in pipeline.stages():
        numbers.append(None if stage.window is None else sum(n is not None for n in numbers))
    return numbers


def input_sources(pipeline: Pipeline, layouts: Sequence[StageLayout]) -> list[int]:
    """The numbers Spark gives the pipeline's input sources, one per branch of a window join (else
    one): Spark numbers a query's sources, and its stateful operators, as they come in its plan,
    depth first. So a window join's branches come in turn, each stage's operator before those of
    the windows feeding it (``Pipeline.stages`` order, ``layouts`` following it), and the input of a
    branch before the carried states of its re-seeded stages, one a stage, that merge with it."""
    if not isinstance(pipeline.join, WindowJoin):
        return [0]
    numbers, number = [], 0
    for span in pipeline.join.spans():
        numbers.append(number)
        number += 1 + sum(1 for stage in layouts[span.start:span.stop] if stage.seeded)
    return numbers


#: Spark's logs in a query's checkpoint directory.
OFFSETS, COMMITS, SOURCES, STATE = "offsets", "commits", "sources", "state"
#: The version line of Spark's log files.
LOG_VERSION = "v1"
#: Characters Spark's offline tools (its state reader, its offline repartition) escape twice in a
#: checkpoint's path (made a URI and back to text, then read as a path: ``#`` becomes a directory
#: named ``%23``): they find no checkpoint at a path with one. A bare SELECT's query directory is
#: ``select#1``.
OFFLINE_UNREADABLE = re.compile(r"[#% ?]")


class CheckpointFiles(Protocol):
    """Read access to a checkpoint and to the files its sources read, by the URIs Spark wrote."""

    def exists(self, uri: str) -> bool: ...

    def list(self, uri: str) -> list[str]: ...

    def read_text(self, uri: str) -> str: ...

    def size(self, uri: str) -> int: ...


class WritableFiles(CheckpointFiles, Protocol):
    """What the job itself does beside its state: write a file whole (readers see the old or the
    new text) and make a directory."""

    def write_text(self, uri: str, text: str) -> None: ...

    def mkdirs(self, uri: str) -> None: ...

    def delete(self, uri: str) -> None: ...


def query_dir_name(pipeline: str) -> str:
    """The directory, under a job's checkpoint, of the streaming query of one pipeline."""
    return re.sub(r"[^A-Za-z0-9_.#-]", "_", pipeline)


def query_dir(checkpoint: str, pipeline: str) -> str:
    """Where the streaming query of a pipeline keeps its checkpoint."""
    return f"{checkpoint.rstrip('/')}/{query_dir_name(pipeline)}"


def name_of(uri: str) -> str:
    """The last component of a URI (a listing gives full URIs)."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PlannedBatch:
    """One file of a query's offset log: what Spark planned for a micro-batch.

    :param batch: the micro-batch
    :param watermark_ms: the event-time watermark the batch evicted with
    :param sources: each source's offset, as the JSON text Spark wrote (in the query's source order)
    :param conf: the settings Spark ran the batch with and keeps for the checkpoint's life
    """

    batch: int
    watermark_ms: int | None
    sources: tuple[str, ...]
    conf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, batch: int, text: str) -> PlannedBatch:
        lines = text.splitlines()
        try:
            metadata = json.loads(lines[1]) if len(lines) >= 2 else {}
        except ValueError:
            metadata = {}
        if not isinstance(metadata, dict):
            metadata = {}
        try:
            watermark = int(metadata["batchWatermarkMs"])
        except (KeyError, ValueError, TypeError):
            watermark = None
        conf = metadata.get("conf")
        return cls(batch, watermark, tuple(lines[2:]),
                   {str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {})

    @property
    def state_partitions(self) -> int | None:
        """The number of state partitions the batch ran with."""
        value = self.conf.get(SHUFFLE_PARTITIONS)
        return int(value) if value is not None and value.isdigit() else None

    @property
    def state_store(self) -> str | None:
        """The state store provider the batch ran with."""
        return self.conf.get(STATE_STORE)

    def file_log_offset(self, source: int = 0) -> int | None:
        """How far into its own log the file source numbered ``source`` had read (its ``logOffset``;
        0: the only input but in a window join)."""
        try:
            return int(json.loads(self.sources[source])["logOffset"])
        except (IndexError, ValueError, KeyError, TypeError):
            return None

    def kafka_offsets(self) -> dict[str, dict[str, int]] | None:
        """A Kafka source's offsets (``{"topic": {"partition": offset}}``); None for another source."""
        try:
            found = json.loads(self.sources[0])
            return {str(topic): {str(p): int(o) for p, o in partitions.items()}
                    for topic, partitions in found.items()}
        except (IndexError, ValueError, TypeError, AttributeError):
            return None


class AppState(str, Enum):
    """Where an application on a checkpoint is in its life."""

    RUNNING = "running"
    STOPPING = "stopping"  # a stop was asked: it finishes the micro-batch it is in
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True)
class Application:
    """The job running on a checkpoint, as its driver says in ``_stategate/running.json``: what runs
    (``sql_digest``: the SHA-256 of its SQL), where, since when, and how alive.

    :param id: Spark's application id
    :param master: the master it runs on
    :param host: the driver's host
    :param pid: the driver's process
    :param trigger: its Spark trigger (``available-now``, ``processing-time=...``)
    :param sql_digest: which version of the job runs
    :param started_at: when it started (ISO 8601, UTC)
    :param heartbeat_at: when its driver last said it runs (ISO 8601, UTC)
    :param heartbeat_s: how often it says so: a heartbeat older than :data:`SILENT_AFTER` of these
        is a driver that is gone
    :param state: where it is in its life
    :param committed_at_start: each pipeline's last committed micro-batch when it started
    :param detail: why it failed, or how it stopped
    :param log: where the driver's output goes, where stategate started it (a detached launch)
    :param state_rows: each pipeline's rows in Spark's state store, and the micro-batch that left
        them, as its last progress said (renewed with every heartbeat): what a restart carries
    """

    id: str
    master: str
    host: str
    pid: int
    trigger: str
    sql_digest: str
    started_at: str
    heartbeat_at: str
    heartbeat_s: float
    state: AppState = AppState.RUNNING
    committed_at_start: dict[str, int | None] = field(default_factory=dict)
    detail: str = ""
    log: str = ""
    state_rows: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "state": self.state.value}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Application:
        data = json.loads(text)
        return cls(**{**{k: data[k] for k in cls.__dataclass_fields__ if k in data},
                      "state": AppState(data["state"]),
                      "state_rows": {p: (int(rows), int(batch)) for p, (rows, batch) in data.get("state_rows", {}).items()}})

    def alive(self, now: datetime | None = None) -> bool:
        """Whether its driver still runs: it says it runs (or stops), and said so lately."""
        if self.state not in (AppState.RUNNING, AppState.STOPPING):
            return False
        silent = ((now or utc_now()) - datetime.fromisoformat(self.heartbeat_at)).total_seconds()
        return silent <= SILENT_AFTER * self.heartbeat_s


#: Heartbeats missed before a driver counts as gone (killed, its host lost).
SILENT_AFTER = 6
#: How often a missing announcement is read, and how far apart, before it counts as absent.
_REREADS, _REREAD_S = 3, 0.1


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class SourceLogError(ValueError):
    """A file of a source's log is not a file source's log (another source wrote it)."""


@dataclass(frozen=True)
class Eviction:
    """A micro-batch a query owes: no input, evicting with the watermark its last batch committed.

    :param after: the query's last batch, committed
    :param watermark_ms: the watermark that batch's input moved to
    """

    after: int
    watermark_ms: int


@dataclass(frozen=True)
class QueryLog:
    """The checkpoint of one streaming query (one pipeline): its offset, commit and source logs."""

    files: CheckpointFiles
    location: str

    def planned(self) -> list[int]:
        """The micro-batches the offset log still holds (Spark prunes old ones), in order."""
        return self._numbered(OFFSETS)

    def committed(self) -> list[int]:
        """The micro-batches the commit log still holds, in order."""
        return self._numbered(COMMITS)

    def batch(self, batch: int) -> PlannedBatch | None:
        """What Spark planned for ``batch``; None where the offset log does not hold it."""
        path = f"{self.location}/{OFFSETS}/{batch}"
        if batch < 0 or not self.files.exists(path):
            return None
        return PlannedBatch.parse(batch, self.files.read_text(path))

    def committed_input_after(self, batch: int | None) -> bool:
        """Whether a micro-batch after ``batch`` (any, for None) committed having read input: its
        sources' offsets moved past the batch's before. A batch Spark runs only to evict state with
        a moved watermark (first at a restart, say) reads none, and commits whatever the job would
        do with a row. A batch with none before it in the log counts."""
        for committed in self.committed():
            if batch is not None and committed <= batch:
                continue
            planned, before = self.batch(committed), self.batch(committed - 1)
            if planned is None or before is None or planned.sources != before.sources:
                return True
        return False

    def planned_batches(self, last: int) -> dict[int, PlannedBatch]:
        """Every micro-batch up to ``last`` that the offset log still holds, each file read once."""
        return {n: PlannedBatch.parse(n, self.files.read_text(f"{self.location}/{OFFSETS}/{n}"))
                for n in self.planned() if n <= last}

    def watermark(self, batch: int) -> int | None:
        """The watermark ``batch`` evicted with (ms); None before the first batch."""
        planned = self.batch(batch)
        return planned.watermark_ms if planned is not None else None

    def last_watermark(self) -> int | None:
        """The watermark of the last planned batch: where the query's state stands."""
        planned = self.planned()
        return self.watermark(planned[-1]) if planned else None

    def committed_watermark(self, batch: int) -> int | None:
        """The watermark ``batch`` left for the next one (ms): what its data moved the watermark to,
        in its commit; None where the commit log does not hold it."""
        path = f"{self.location}/{COMMITS}/{batch}"
        if not self.files.exists(path):
            return None
        lines = self.files.read_text(path).splitlines()
        try:
            return int(json.loads(lines[1])["nextBatchWatermarkMs"])
        except (IndexError, ValueError, KeyError, TypeError):
            return None

    def due_eviction(self) -> Eviction | None:
        """The batch of no input the query owes, where its last batch committed a watermark that no
        batch has evicted with yet: Spark plans it at the query's next trigger, and a restarted
        query, which has no batch before to ask, only once new input comes. None where none is due."""
        planned = self.planned()
        if not planned or self.committed()[-1:] != planned[-1:]:
            return None  # none yet, or a batch planned and not committed: it runs (again) first
        last = planned[-1]
        advanced, used = self.committed_watermark(last), self.watermark(last)
        if advanced is None or used is None or advanced <= used:
            return None
        return Eviction(last, advanced)

    def holds_state(self) -> bool:
        """Whether the query keeps state in Spark's state store (a stateless query has none)."""
        return self.files.exists(f"{self.location}/{STATE}")

    def source_log(self, source: int) -> str:
        """The directory of the log of the query's source numbered ``source`` (a file source keeps
        one; :func:`input_sources` says which are the query's inputs)."""
        return f"{self.location}/{SOURCES}/{source}"

    def source_files(self, source: str, up_to: int) -> dict[str, tuple[int, int]]:
        """Each file the source at ``source`` read up to its log entry ``up_to``: the entry that
        first lists it and its modification time. Raises :class:`SourceLogError` where a line is
        not a file source's."""
        found: dict[str, tuple[int, int]] = {}
        for log_file in self.files.list(source):
            if not name_of(log_file).removesuffix(".compact").isdigit():
                continue
            for line in self.files.read_text(log_file).splitlines()[1:]:
                try:
                    record = json.loads(line)
                    path, entry, mtime = record["path"], int(record["batchId"]), int(record["timestamp"])
                except (ValueError, KeyError, TypeError):
                    raise SourceLogError(f"{log_file} is not a file source's log") from None
                if entry <= up_to and (path not in found or entry < found[path][0]):
                    found[path] = (entry, mtime)
        return found

    def first_source_entry(self, source: int) -> str:
        """The first entry of the log of the query's source numbered ``source``."""
        return f"{self.source_log(source)}/0"

    def _numbered(self, log: str) -> list[int]:
        names = (name_of(p) for p in self.files.list(f"{self.location}/{log}"))
        return sorted(int(name) for name in names if name.isdigit())


def source_log_entry(files: list[tuple[str, int]], entry: int = 0) -> str:
    """A file source's log entry listing ``files`` (path, modification time): what Spark writes
    when its source reads them, and what a take-over writes to count them as read."""
    return "\n".join((LOG_VERSION, *(json.dumps({"path": path, "timestamp": mtime, "batchId": entry})
                                     for path, mtime in files)))


@dataclass(frozen=True)
class Checkpoint:
    """A job's checkpoint: one query per pipeline, and stategate's record beside them."""

    files: CheckpointFiles
    uri: str

    def query(self, pipeline: str) -> QueryLog:
        return QueryLog(self.files, query_dir(self.uri, pipeline))

    def record_path(self, name: str = "") -> str:
        """``_stategate/<name>`` in this checkpoint (the directory itself without a name)."""
        return f"{self.uri.rstrip('/')}/{RECORD_DIR}" + (f"/{name}" if name else "")

    def holds_state(self) -> bool:
        """Whether Spark has written anything here. A record alone (a job stopped before its
        queries started) is no state: a fresh start may replace it."""
        return any(name_of(entry) != RECORD_DIR for entry in self.files.list(self.uri))

    def watermarks(self, pipelines: list[str]) -> dict[str, int | None]:
        """Each pipeline's watermark as its last planned batch left it."""
        return {pipeline: self.query(pipeline).last_watermark() for pipeline in pipelines}

    def recorded_sql(self) -> str | None:
        """The SQL the state was built by; None where no stategate record is here."""
        return self._read(JOB_SQL)

    def signature(self) -> dict[str, Any] | None:
        """The state layout recorded beside the state: the authority on how it is laid out."""
        text = self._read(SIGNATURE)
        if text is None:
            return None
        signature = json.loads(text)
        if not isinstance(signature, dict):
            raise ValueError(f"{self.record_path(SIGNATURE)} is not a state signature (a JSON object)")
        return signature

    def take_over(self) -> dict[str, Any] | None:
        """The take-over this checkpoint started with, as recorded; None if it took over from none."""
        text = self._read(TAKE_OVER)
        return None if text is None else json.loads(text)

    def application(self) -> Application | None:
        """The application that last ran on this checkpoint, as its driver last said; None if none did.

        Read again where it is missing for a moment: a driver renews it by renaming a new copy over
        it, which a store without an atomic overwrite (Hadoop's local filesystem among them) does by
        deleting the old one first, and a stop must not take that moment for a job that is gone."""
        for attempt in range(_REREADS):
            try:
                text = self._read(RUNNING)
            except FileNotFoundError:  # deleted between looking for it and reading it
                text = None
            if text is not None:
                return Application.from_json(text)
            if attempt < _REREADS - 1:
                time.sleep(_REREAD_S)
        return None

    def carried(self) -> tuple[Carried, ...]:
        """What each pipeline's state holds, as the application that last ran here said: what a
        restart carries over."""
        app = self.application()
        return tuple(Carried(p, rows, batch) for p, (rows, batch) in sorted(app.state_rows.items())) if app else ()

    def stop_requested(self) -> dict[str, Any] | None:
        """A request that the application stop: who asked, when; None if nobody did."""
        text = self._read(STOP)
        return None if text is None else json.loads(text)

    def _read(self, name: str) -> str | None:
        path = self.record_path(name)
        return self.files.read_text(path) if self.files.exists(path) else None


@dataclass(frozen=True)
class WritableCheckpoint(Checkpoint):
    """The checkpoint a job runs on: it records beside its state what a later start must know."""

    files: WritableFiles

    def record(self, sql: str, signature: dict[str, Any]) -> None:
        """Store the SQL the state is now built by and its layout; each file replaced whole."""
        self.files.mkdirs(self.record_path())
        self.files.write_text(self.record_path(JOB_SQL), sql)
        self.files.write_text(self.record_path(SIGNATURE), json.dumps(signature, indent=2))

    def record_take_over(self, take_over: dict[str, Any]) -> None:
        self.files.write_text(self.record_path(TAKE_OVER), json.dumps(take_over, indent=2))

    def announce(self, application: Application) -> None:
        """Say what runs here (and that it still does)."""
        self.files.mkdirs(self.record_path())
        self.files.write_text(self.record_path(RUNNING), application.to_json())

    def request_stop(self, by: str) -> None:
        """Ask the application running here to stop (it sees the request through the checkpoint's
        storage, wherever its driver runs)."""
        self.files.mkdirs(self.record_path())
        self.files.write_text(self.record_path(STOP), json.dumps({"by": by, "at": utc_now().isoformat()}))

    def withdraw_stop(self) -> None:
        if self.files.exists(self.record_path(STOP)):
            self.files.delete(self.record_path(STOP))

    def plan_eviction(self, pipeline: str) -> int | None:
        """Plan the micro-batch that evicts with the watermark the pipeline's last batch committed,
        where a stop or a kill came before Spark planned it (:meth:`QueryLog.due_eviction`): a
        restart of Spark alone plans it only once new input comes, so the windows that watermark
        closed would wait for input that may never come (a quiet source, the end of an
        available-now run). Planned as Spark plans one: the last batch's offsets (no input), the
        watermark it committed, the time now. The batch planned; None where none is due."""
        query = self.query(pipeline)
        due = query.due_eviction()
        if due is None:
            return None
        lines = self.files.read_text(f"{query.location}/{OFFSETS}/{due.after}").splitlines()
        metadata = json.loads(lines[1])
        metadata.update(batchWatermarkMs=due.watermark_ms, batchTimestampMs=int(time.time() * 1000))
        self.files.write_text(f"{query.location}/{OFFSETS}/{due.after + 1}",
                              "\n".join((lines[0], json.dumps(metadata, separators=(",", ":")), *lines[2:])))
        return due.after + 1

    def seed_source_log(self, pipeline: str, source: int, files: list[tuple[str, int]]) -> bool:
        """Log ``files`` as read, as the first entry of the pipeline's source numbered ``source``,
        before its first batch; never once the source has a log (a restart keeps what Spark wrote).
        Whether it was written."""
        first = self.query(pipeline).first_source_entry(source)
        if not files or self.files.exists(first):
            return False
        self.files.write_text(first, source_log_entry(files))
        return True

"""Re-seeding at start: a pipeline's state carried from its old checkpoint into a new layout.

Where a change's aggregates do not fit the deployed state layout and the pipeline can be re-seeded
(:mod:`analyzer.reseed`), the restart does not clear the state. Before any query starts, per
pipeline:

1. the old query's checkpoint moves, whole and read-only from then on, to
   ``_stategate/reseeded/<when>/<query>`` (with the SQL and layout that built it beside, in that
   directory's own ``_stategate/``): nothing is deleted or overwritten;
2. its state at its last committed batch N (Spark's state data source, ``format("statestore")``)
   becomes the carried state (``<query>/stategate-reseed``, :func:`checkpoint.carried_dir`; a
   cascade or a window join carries each window's): every open (key, window) group with the fields of each
   aggregate the new version keeps, renamed to the slots of the new layout; an added aggregate has
   none, so it starts from zero;
3. the new query starts on a new checkpoint at the same place: its first micro-batch merges the
   carried state into its own aggregates (``StageLayout.seeded``, :func:`spark_jobs.state.carried_rows`);
   its source (each of a window join's) counts as read every file the old query's read up to N
   (its log's first entry, as a take-over writes it), so it goes on from exactly there; its sink gets only windows ending after
   the old query's watermark W, which the old one emitted (:class:`~spark_jobs.cutover.Cutover`
   with nothing replayed, recorded as a take-over for every later start).

A kill at any moment is safe: the job writes what it is about to do (``_stategate/reseed.json``)
before it moves anything, every step is skipped where it is done, and the next start with the
same SQL finishes it (another SQL is refused until it is). The record moves into the archive once
the new version's record is written.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from stategate.analyzer import JobModel
from stategate.analyzer.build import build
from stategate.analyzer.aggregates import (ARRIVED, ARRIVED_BEFORE, FIRST_ARRIVED, FIRST_ORDERED, INTEGER_VALUE,
                                           LAST_ARRIVED, LAST_ORDERED, Pool)
from stategate.analyzer.layout import JobLayout, StageLayout
from stategate.analyzer.model import Pipeline, WindowJoin
from stategate.analyzer.signature import state_signature
from stategate.analyzer.windows import Session
from stategate.spark_jobs.checkpoint import (JOB_SQL, OFFLINE_UNREADABLE, RESEED_PENDING, RESEEDED, SIGNATURE,
                                             TAKE_OVER, Checkpoint, QueryLog, WritableCheckpoint, carried_dir,
                                             name_of, query_dir, query_dir_name, stateful_operators)
from stategate.spark_jobs import failpoints
from stategate.spark_jobs.assembly import SLICES_DIR, SliceLog, slices_dir
from stategate.spark_jobs.cutover import NONE, Cutover, TakeOver, carried_cutover
from stategate.spark_jobs.guard import CheckpointRefused
from stategate.spark_jobs.lifecycle import sql_digest
from stategate.spark_jobs.state import (GROUPING_SET, ROWS, from_text, ordered_from_arrived, pooled_as_kept,
                                        stored_fields)
from stategate.spark_jobs.storage import HadoopStorage

log = logging.getLogger("stategate.reseed")



class ReseedRefused(CheckpointRefused):
    """A re-seed cannot start, or one under way belongs to another version; nothing was changed."""


@dataclass(frozen=True)
class Reseed:
    """A re-seed as recorded before anything moves.

    :param sql_digest: the version it re-seeds into (:func:`lifecycle.sql_digest`)
    :param archive: where the old queries' checkpoints go, a checkpoint of its own
    :param signature: the new version's state signature: the layout it re-seeds into
    """

    sql_digest: str
    archive: str
    signature: dict[str, Any]

    @property
    def layout(self) -> JobLayout:
        """The layout the new version runs with, its re-seeded pipelines marked."""
        return JobLayout(JobLayout.from_signature(self.signature).pipelines,
                         reseeded=frozenset(self.signature[_RESEEDED]))

    def to_json(self) -> str:
        return json.dumps({"sql_digest": self.sql_digest, "archive": self.archive, "signature": self.signature},
                          indent=2)

    @classmethod
    def pending(cls, checkpoint: Checkpoint) -> Reseed | None:
        """The re-seed a job started on ``checkpoint`` and did not finish; None if there is none."""
        path = checkpoint.record_path(RESEED_PENDING)
        if not checkpoint.files.exists(path):
            return None
        data = json.loads(checkpoint.files.read_text(path))
        return cls(data["sql_digest"], data["archive"], data["signature"])

    @classmethod
    def to_finish(cls, checkpoint: Checkpoint, sql: str) -> Reseed | None:
        """The unfinished re-seed (a killed job's) that a start with ``sql`` finishes before
        anything else; refused where it re-seeds into another version, which must finish it."""
        reseed = cls.pending(checkpoint)
        if reseed is None:
            return None
        if reseed.sql_digest != sql_digest(sql):
            raise ReseedRefused(f"a re-seed of {checkpoint.uri} into another version of the job is under way "
                                f"({checkpoint.record_path(RESEED_PENDING)}): start that version to finish it first")
        log.info("finishing the re-seed of %s recorded in %s", ", ".join(sorted(reseed.layout.reseeded)),
                 checkpoint.record_path(RESEED_PENDING))
        return reseed


#: In a re-seed's signature: the pipelines it re-seeds.
_RESEEDED = "reseeded"


def begin(checkpoint: WritableCheckpoint, sql: str, model: JobModel, layout: JobLayout) -> Reseed:
    """Record the re-seed of ``layout.reseeded`` before anything moves. Refused (nothing written)
    where Spark's state reader cannot open the archive's path."""
    when = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    archive = checkpoint.record_path(f"{RESEEDED}/{when}")
    for name in sorted(layout.reseeded):
        if OFFLINE_UNREADABLE.search(archived_query(archive, name)):
            raise ReseedRefused(
                f"cannot re-seed {name}: Spark's state reader finds no checkpoint at a path with any of "
                f"{OFFLINE_UNREADABLE.pattern[1:-1]} in it ({archived_query(archive, name)}); nothing was "
                "changed. Move the checkpoint to a path without them, or clear the state")
    reseed = Reseed(sql_digest(sql), archive,
                    {**state_signature(model, layout), _RESEEDED: sorted(layout.reseeded)})
    checkpoint.files.write_text(checkpoint.record_path(RESEED_PENDING), reseed.to_json())
    return reseed


def carry(spark: SparkSession, checkpoint: WritableCheckpoint, model: JobModel, reseed: Reseed) -> dict[str, Cutover]:
    """Carry out ``reseed`` (each step skipped where it is done): the old queries archived, their
    state carried into the new layout; each re-seeded pipeline's cutover, by name (and logged)."""
    files = checkpoint.files
    archive = Checkpoint(files, reseed.archive)
    if not files.exists(archive.record_path(JOB_SQL)):  # the record still describes the old state
        files.mkdirs(archive.record_path())
        for name in (TAKE_OVER, SIGNATURE, JOB_SQL):  # the SQL last: it says the copy is whole
            if files.exists(checkpoint.record_path(name)):
                files.write_text(archive.record_path(name), files.read_text(checkpoint.record_path(name)))
    old = JobLayout.from_signature(archive.signature() or {})
    layout = reseed.layout
    storage = HadoopStorage(spark)
    for name in sorted(layout.reseeded):
        location, archived = query_dir(checkpoint.uri, name), archived_query(reseed.archive, name)
        if not files.exists(archived):
            storage.replace(location, archived)
            log.info("re-seed: %s moved to %s, read only from now on", location, archived)
            failpoints.reach("reseed.moved")
        batch = QueryLog(files, archived).committed()[-1]
        pipeline = model.pipeline_named[name]
        logs = _slice_logs(pipeline)
        for place, (stage, operator, kept, fresh) in enumerate(zip(pipeline.stages(), stateful_operators(pipeline),
                                                                  old.pipelines[name], layout.pipelines[name])):
            seed = carried_dir(location, place)
            if operator is None or files.exists(seed):
                continue  # an aggregation of whole windows keeps no state; or this one's is carried already
            session = stage.window is not None and isinstance(stage.window.shape, Session)
            carried = carried_state(spark, storage, archived, batch, operator, kept, fresh, session, logs.get(place))
            staged = f"{seed}.staged"
            carried.write.mode("overwrite").parquet(staged)
            storage.replace(staged, seed)
            log.info("re-seed: %s: %d open (key, window) groups of micro-batch %d carried into the new layout%s",
                     name, spark.read.parquet(seed).count(), batch, f" (stage {place})" if place else "")
    before = build(files.read_text(archive.record_path(JOB_SQL)), source=archive.record_path(JOB_SQL))
    cutovers = {name: carried_cutover(files, QueryLog(files, archived_query(reseed.archive, name)), before,
                                      old.pipelines[name], model, model.pipeline_named[name])
                for name in layout.reseeded}
    for cutover in cutovers.values():
        log.info("re-seed: %s", cutover.describe())
    return cutovers


def undo_unused(spark: SparkSession, checkpoint: WritableCheckpoint, sql: str) -> list[str]:
    """Undo the latest re-seed where its new queries never committed a micro-batch and ``sql`` is
    the version it replaced (a rollback of a version that failed at once, or its owner starting the
    old version again): the unused new queries move into the re-seed's archive (``<query>.unused``),
    the archived ones back in their place, and the record beside them is theirs again. Then the
    job restarts on its own state, as if the re-seed had not run. The pipelines restored."""
    files = checkpoint.files
    archives = sorted(files.list(checkpoint.record_path(RESEEDED)), key=name_of)
    if not archives or Reseed.pending(checkpoint) is not None:
        return []
    archive = Checkpoint(files, archives[-1])
    done = archive.record_path(RESEED_PENDING)
    if archive.recorded_sql() != sql or not files.exists(done):
        return []
    pipelines = sorted(json.loads(files.read_text(done))["signature"][_RESEEDED])
    if any(QueryLog(files, query_dir(checkpoint.uri, name)).committed() for name in pipelines):
        return []  # the new version has written state: the re-seed stands
    storage = HadoopStorage(spark)
    for name in pipelines:
        location, archived = query_dir(checkpoint.uri, name), archived_query(archive.uri, name)
        if files.exists(archived):
            if files.exists(location):
                storage.replace(location, f"{archived}.unused")
            storage.replace(archived, location)
    for name in (TAKE_OVER, SIGNATURE, JOB_SQL):
        if files.exists(archive.record_path(name)):
            files.write_text(checkpoint.record_path(name), files.read_text(archive.record_path(name)))
        elif files.exists(checkpoint.record_path(name)):  # the re-seed wrote the first take-over record
            files.write_text(archive.record_path(f"{name}.unused"), files.read_text(checkpoint.record_path(name)))
            files.delete(checkpoint.record_path(name))
    log.warning("the re-seed recorded in %s never committed a micro-batch: undone, %s restored on its own state",
                archive.uri, ", ".join(pipelines))
    return pipelines


def archived_query(archive: str, pipeline: str) -> str:
    """Where a re-seed archives the query of ``pipeline``: named without the characters Spark's
    state reader cannot open (a bare SELECT's query is ``select#1``)."""
    return f"{archive}/{OFFLINE_UNREADABLE.sub('_', query_dir_name(pipeline))}"


def finish(checkpoint: WritableCheckpoint, reseed: Reseed, taken: dict[str, Cutover]) -> None:
    """After the new version's record is written: every later start applies the re-seeded
    pipelines' cutovers (with any a take-over recorded), and the re-seed's record moves into its
    archive."""
    recorded = TakeOver.recorded(checkpoint)
    if recorded is None:
        recorded = TakeOver(reseed.archive, NONE, {})
    checkpoint.record_take_over(TakeOver(recorded.archived, recorded.replay, {**recorded.cutovers, **taken}).to_dict())
    pending = checkpoint.record_path(RESEED_PENDING)
    checkpoint.files.write_text(Checkpoint(checkpoint.files, reseed.archive).record_path(RESEED_PENDING),
                                checkpoint.files.read_text(pending))
    checkpoint.files.delete(pending)


def carried_state(spark: SparkSession, storage: HadoopStorage, location: str, batch: int, operator: int,
                  old: StageLayout, new: StageLayout, session: bool = False, slices: str | None = None) -> DataFrame:
    """The state of the stateful operator numbered ``operator`` in the query at ``location``
    (:func:`checkpoint.stateful_operators`) after ``batch``, one row per
    (key, slice) group its windows may still need: the open ones in Spark's state store and, for
    HOP and CUMULATE windows (only ever a branch's outermost stage), the closed slices its slice log
    (in ``slices``) retains (:mod:`spark_jobs.assembly`; they go into the new state, which emits
    them to its own slice log once its watermark passes them again). Each with its keys, its row count and, renamed to the new
    layout's slots, the fields of every aggregate both layouts hold (by identity). An aggregate only
    the new layout holds has no field: it starts from zero."""
    spark.streams.active  # Spark's state reader reports to the coordinator its streaming queries start
    stored = spark.read.format("statestore").option("batchId", batch).option("operatorId", operator).load(location)
    groups = stored_fields(stored, old, session)
    slice_log = SliceLog(storage, location, slices) if slices is not None else None
    entries = slice_log.read_by(batch + 1) if slice_log is not None else []
    if slice_log is not None and entries:
        retained = pooled_as_kept(spark.read.parquet(*slice_log.paths(entries)), old)
        groups = groups.unionByName(retained, allowMissingColumns=True)
    renamed = []
    for pool in Pool:
        before = dict(old.pool(pool).assigned)
        for identity, slot in new.pool(pool).assigned:
            if identity not in before or new.is_row_count(pool, slot):
                continue  # an added aggregate has nothing to carry; a COUNT(*) that is the row count carries it
            shape = new.pool(pool).shapes[slot]
            # FIRST_VALUE's or LAST_VALUE's value as text with its arrival, in a slot made before
            # numbers and times were kept in their own type, or for a type that was not certain.
            as_text = next(((n, f.sql_type == ARRIVED) for f in (FIRST_ORDERED, LAST_ORDERED, FIRST_ARRIVED, LAST_ARRIVED)
                            for n in [f"{f.stem}{before[identity]}"] if n in groups.columns), None)
            for position, field in enumerate(shape.fields(pool, new.ordered_arrivals)):
                # An integer's field was an exact number's in a slot made before integers had one.
                stems = [field.stem, *([shape.as_exact.fields(pool)[position].stem] if field is INTEGER_VALUE else [])]
                names = [ROWS] if old.is_row_count(pool, before[identity]) else \
                    [f"{stem}{before[identity]}" for stem in stems]
                name = next((n for n in names if n in groups.columns), None)
                # A value kept its arrival as a struct in a layout recorded before it was two longs.
                nested = f"{ARRIVED_BEFORE[field].stem}{before[identity]}" if field in ARRIVED_BEFORE else None
                if name is not None:
                    renamed.append(F.col(name).alias(f"{field.stem}{slot}"))
                elif nested is not None and nested in groups.columns:
                    renamed.append(ordered_from_arrived(nested, field.serialized).alias(f"{field.stem}{slot}"))
                elif as_text is not None and shape.family is not None:
                    renamed.append(from_text(*as_text, field, shape.sql_type(field), shape.family)
                                   .alias(f"{field.stem}{slot}"))
    keys = groups.columns[:groups.columns.index(GROUPING_SET)]
    return groups.select(*keys, GROUPING_SET, "w", ROWS, *renamed)


def _slice_logs(pipeline: Pipeline) -> dict[int, str]:
    """Where the outermost window of each branch keeps its slice log, by the window's place in
    ``Pipeline.stages`` (a cascade's upstream windows are never assembled; an aggregation of whole
    windows has none, the windows it reads may)."""
    stages = pipeline.stages()
    if isinstance(pipeline.join, WindowJoin):
        spans, logs = pipeline.join.spans(), [slices_dir(index) for index in range(len(pipeline.join.branches))]
    else:
        spans, logs = (range(len(stages)),), [SLICES_DIR]
    return {next(place for place in span if stages[place].window is not None): where
            for span, where in zip(spans, logs)}


def read_carried(spark: SparkSession, location: str, stage: int) -> DataFrame:
    """The carried state of the window aggregation at ``stage`` in ``Pipeline.stages`` in the
    re-seeded query at ``location``, as a stream: a source of the query, read whole by its first
    micro-batch and never again (its files never change)."""
    path = carried_dir(location, stage)
    if not HadoopStorage(spark).exists(path):
        raise ReseedRefused(f"{location} was re-seeded, but its carried state {path} is gone: the query cannot "
                            "restart without it. Restore it from a copy of the checkpoint, or clear the state")
    return spark.readStream.schema(spark.read.parquet(path).schema).parquet(path)

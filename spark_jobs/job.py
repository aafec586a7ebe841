"""Run a job script: guard the checkpoint, compile every pipeline, start one streaming query each."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from stategate.analyzer import Report, SQLModelError, Verdict, build
from stategate.analyzer.runnable import check_settings
from stategate.analyzer.settings import SHUFFLE_PARTITIONS, ignored, spark_settings, state_settings
from stategate.spark_jobs.checkpoint import Application, WritableCheckpoint, input_sources, query_dir
from stategate.spark_jobs.compile import CompiledPipeline, compile_pipeline
from stategate.spark_jobs.connectors import BatchWriter, batch_writer
from stategate.spark_jobs.cutover import BOUNDED, FULL, REPLAY_POLICIES, Cutover, TakeOver, cutovers
from stategate.spark_jobs.guard import CheckpointGuard
from stategate.spark_jobs.lifecycle import HEARTBEAT_S, Supervisor
from stategate.spark_jobs.rescale import Repartitioned, carry_partitions
from stategate.spark_jobs.reseed import Reseed, begin, carry, finish, undo_unused
from stategate.spark_jobs.session import hold_checkpoint_conf, job_settings, try_settings
from stategate.spark_jobs import triggers
from stategate.spark_jobs.storage import HadoopStorage

log = logging.getLogger("stategate.job")



@dataclass
class RunResult:
    report: Report | None  # the change against the checkpoint's SQL; None on a fresh start
    queries: list[StreamingQuery]
    cutovers: dict[str, Cutover] = field(default_factory=dict)  # a take-over's, by pipeline
    application: Application | None = None  # how the job ended, when run to its end
    repartitioned: list[Repartitioned] = field(default_factory=list)  # state carried to a new parallelism


def run(
    spark: SparkSession,
    sql: str,
    checkpoint: str | Path,
    *,
    source: str = "<sql>",
    trigger: str = triggers.AVAILABLE_NOW,
    fresh: bool = False,
    accept: Verdict = Verdict.PARTIAL,
    writers: Mapping[str, BatchWriter] | None = None,
    wait: bool = True,
    take_over: str | None = None,
    replay: str = BOUNDED,
    heartbeat_s: float = HEARTBEAT_S,
) -> RunResult:
    """Start the job. ``writers`` replaces the sink of a pipeline (by name), for tests and tools; a
    writer acts on its batch once, as every action runs the batch's stateful aggregation again.

    With ``wait`` the job runs to its end: the end of its input (``available-now``), or a stop
    asked through its checkpoint (:mod:`spark_jobs.lifecycle`; every ``heartbeat_s`` it says it
    runs and looks for one), and late rows are told as the micro-batches that dropped them end.
    Without, the queries are returned running, unsupervised.

    ``take_over`` is the archived checkpoint of the version this one replaces after its state was
    cleared (``fresh``): with ``replay`` bounded (the default) each pipeline re-reads only what its
    open windows need and emits only windows the archived version did not
    (:mod:`spark_jobs.takeover`); ``none`` skips all the archived version read; ``full`` reads all."""
    options = triggers.options(trigger)
    model = build(sql, source=source)
    checkpoint = str(checkpoint).rstrip("/")
    storage = HadoopStorage(spark)
    if take_over is not None and not fresh:
        raise ValueError("--take-over starts a new checkpoint: it needs --fresh")
    if replay not in REPLAY_POLICIES:
        raise ValueError(f"unknown replay policy {replay!r}: use {', '.join(REPLAY_POLICIES)}")
    check_settings(model)
    settings = spark_settings(model)
    try_settings(spark, settings, model.source)
    hold_checkpoint_conf(spark, checkpoint, settings)
    unused = ignored(model)
    if unused:
        log.warning("no meaning on Spark, so the job runs without: %s", ", ".join(unused))
    state = WritableCheckpoint(storage, checkpoint)
    guard = CheckpointGuard(state, sql, model)
    recorded = TakeOver.recorded(state)
    taken = recorded.cutovers if recorded is not None else {}
    if take_over is not None and recorded is not None and take_over == recorded.archived and guard.holds_state():
        fresh, take_over = False, None  # the same take-over again (a retried task): resume it
    elif fresh:
        taken = {}  # a fresh start applies only the take-over it is given, never a stale record
    undo_unused(spark, state, sql)
    reseed = Reseed.to_finish(state, sql)
    report, layout = (None, reseed.layout) if reseed is not None else guard.check(fresh=fresh, accept=accept)
    repartitioned: list[Repartitioned] = []
    if report is not None:
        log.info("restarting from %s: verdict %s\n%s", checkpoint, report.verdict.value, report.to_text())
        # Each query's state at the job's number of state partitions, before any query starts.
        partitions = int(state_settings(model)[SHUFFLE_PARTITIONS])
        repartitioned = [done for p in model.pipelines if p.name not in layout.reseeded
                         for done in carry_partitions(spark, storage, query_dir(checkpoint, p.name), partitions)]
    if layout.reseeded:
        reseed = reseed or begin(state, sql, model, layout)
        reseeded = carry(spark, state, model, reseed)
        taken = {**taken, **reseeded}
    if take_over is not None:
        taken = cutovers(storage, take_over, model, replay) if replay != FULL else {}
        for pipeline in model.pipelines:
            log.info("take-over: %s", taken[pipeline.name].describe() if pipeline.name in taken else
                     f"{pipeline.name}: a full replay" + ("" if replay == FULL else
                                                          " (the archived version wrote none of its sink's rows)"))
    compiled = [compile_pipeline(spark, model, p, layout, query_dir(checkpoint, p.name), taken.get(p.name))
                for p in model.pipelines]
    batch_writers = [(writers or {}).get(p.pipeline.name) or _writer(p, source) for p in compiled]
    # Recorded before the first query starts: a job killed at any moment after Spark wrote its first
    # checkpoint file leaves a checkpoint whose SQL is known, so the restart can be checked.
    guard.record(layout)
    if take_over is not None:
        state.record_take_over(TakeOver(take_over, replay, taken).to_dict())
    if reseed is not None:
        finish(state, reseed, reseeded)
    for name, cutover in taken.items():  # a resumed take-over's query may not have started yet
        for files, number in zip(cutover.skipped, input_sources(model.pipeline_named[name], layout.pipelines[name])):
            state.seed_source_log(name, number, list(files))
    for pipeline in model.pipelines:
        evicting = state.plan_eviction(pipeline.name)
        if evicting is not None:
            log.info("%s: micro-batch %d planned with no input, to close what the last one's watermark passed "
                     "(the run before stopped before it planned it)", pipeline.name, evicting)
    supervisor = Supervisor(state, sql, trigger, heartbeat_s)
    queries = []
    try:
        with job_settings(spark, settings):
            for plan, writer in zip(compiled, batch_writers):
                queries.append(_start(plan, writer, query_dir(checkpoint, plan.pipeline.name), options,
                                      supervisor.batch_starting))
    except BaseException:
        for query in queries:
            if query.isActive:
                query.stop()
        raise
    if not wait:
        return RunResult(report, queries, taken, repartitioned=repartitioned)
    ended = supervisor.supervise(spark, queries, [p.name for p in model.pipelines])
    return RunResult(report, queries, taken, ended, repartitioned)


def _writer(pipeline: CompiledPipeline, source: str) -> BatchWriter:
    if pipeline.sink is None:
        raise ValueError(f"{pipeline.pipeline.name}: a bare SELECT has no sink; use INSERT INTO")
    try:
        return batch_writer(pipeline.sink)
    except SQLModelError as error:
        raise error.located(source) from None


def _start(pipeline: CompiledPipeline, writer: BatchWriter, location: str, options: dict,
           starting: Callable[[str, int], None]) -> StreamingQuery:
    """The pipeline's streaming query; ``starting`` is asked (with the pipeline and the batch)
    before a micro-batch writes anything."""
    finalize = pipeline.finalize
    name = pipeline.pipeline.name

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        starting(name, batch_id)
        with finalize(batch, batch_id) as rows:
            writer(rows, batch_id)

    return (pipeline.stream.writeStream.outputMode("append").foreachBatch(write_batch)
            .option("checkpointLocation", location).trigger(**options).start())


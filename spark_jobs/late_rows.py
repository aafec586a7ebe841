"""Rows dropped behind the watermark, told per micro-batch: no input is lost without a word.

A record whose slice the watermark has already closed can no longer be counted: its window was
emitted. Spark's window aggregation drops it, as Flink drops late records. Spark decides lateness
per micro-batch: a batch drops the records whose slice ended at or before the watermark the
previous batch ran with (Flink's watermark moves between records, so it can call records late
that Spark still counts, and on unordered files the two differ). Files are read in the order of
their modification time (Spark's file source); files with equal times in no defined order, so a
directory read a file per micro-batch (``'spark.maxFilesPerTrigger' = '1'``) needs distinct
modification times where order matters.

Spark counts what it drops in its stateful operator (``numRowsDroppedByWatermark``), after the
partial aggregation each input task runs before the shuffle: one row dropped there is one or more
input records of one group and slice. The count is a lower bound on the records lost, and zero
exactly when none were; this module turns it into a warning per batch and pipeline.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.streaming.listener import StreamingQueryProgress

log = logging.getLogger("stategate.late_rows")


class LateRows:
    """Warns of each micro-batch in which a query dropped late rows, read from the queries' own
    progress by the job's supervisor between its looks at them (:mod:`spark_jobs.lifecycle`).

    Not a PySpark ``StreamingQueryListener``: PySpark turns every progress event for one into
    Python by walking it in the JVM, a call per field and a Java exception at the end of each list,
    and each exception's conversion names classes package by package, every package a search of the
    JVM's whole class path (docs: benchmarks, the driver around each micro-batch). A progress read
    here is one call and its JSON."""

    def __init__(self, queries: Mapping[str, StreamingQuery]) -> None:
        """:param queries: the job's queries, by pipeline"""
        self.queries = queries
        self._told: dict[str, int] = {}  # the last micro-batch told of, by pipeline

    def tell(self) -> None:
        """Warn of the micro-batches completed since the last call that dropped late rows."""
        for pipeline, query in self.queries.items():
            for progress in self._new(pipeline, query):
                dropped = sum(operator.numRowsDroppedByWatermark for operator in progress.stateOperators)
                if dropped:
                    log.warning("%s: micro-batch %d dropped %d group(s) of late rows, each one or more input "
                                "records whose window the watermark had closed (watermark now %s)",
                                pipeline, progress.batchId, dropped, progress.eventTime.get("watermark", "?"))
                self._told[pipeline] = progress.batchId

    def _new(self, pipeline: str, query: StreamingQuery) -> list[StreamingQueryProgress]:
        """The progress of the micro-batches ``query`` completed since the last told: its last one
        alone unless more have completed (Spark keeps the last hundred of this run)."""
        last = query.lastProgress
        told = self._told.get(pipeline)
        if last is None or (told is not None and last.batchId <= told):
            return []
        if told is not None and last.batchId == told + 1:
            return [last]
        return [p for p in query.recentProgress if told is None or p.batchId > told]

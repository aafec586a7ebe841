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
import weakref

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery, StreamingQueryListener

log = logging.getLogger("stategate.late_rows")


class LateRows(StreamingQueryListener):
    """Logs a warning for each micro-batch in which a watched query dropped late rows."""

    def __init__(self) -> None:
        self.pipelines: dict[str, str] = {}  # query id → pipeline name

    def watch(self, query: StreamingQuery, pipeline: str) -> None:
        self.pipelines[str(query.id)] = pipeline

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        pipeline = self.pipelines.get(str(progress.id))
        dropped = sum(operator.numRowsDroppedByWatermark for operator in progress.stateOperators)
        if pipeline is not None and dropped:
            log.warning("%s: micro-batch %d dropped %d group(s) of late rows, each one or more input records "
                        "whose window the watermark had closed (watermark now %s)",
                        pipeline, progress.batchId, dropped, progress.eventTime.get("watermark", "?"))

    def onQueryTerminated(self, event) -> None:
        self.pipelines.pop(str(event.id), None)


_LISTENERS: weakref.WeakKeyDictionary[SparkSession, LateRows] = weakref.WeakKeyDictionary()


def late_rows(spark: SparkSession) -> LateRows:
    """The session's listener, added to it at the first call."""
    if spark not in _LISTENERS:
        _LISTENERS[spark] = LateRows()
        spark.streams.addListener(_LISTENERS[spark])
    return _LISTENERS[spark]

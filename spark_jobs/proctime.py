"""Processing time on Spark: what a record's processing time is, and what closes its windows.

A record's processing time is the start time of the micro-batch that reads it: Spark's batch
timestamp, which ``current_timestamp()`` stands for in a streaming query. Spark keeps it in the
offset log, so a micro-batch replayed after a crash gives its records the same times and the file
sinks stay exactly-once. (Flink reads the clock per record, which no replay can repeat.)

A window closes in the first micro-batch after one that started past its end: the processing time
is the event time of a watermark without delay, and Spark evicts a window once the watermark of an
earlier micro-batch has passed its end. Spark moves that watermark only with rows, so a clock
stream joins the source: Spark's ``rate-micro-batch`` source, one row a micro-batch, dropped before
anything is aggregated. Every trigger then runs a micro-batch, so under ``processing-time=<interval>``
a window closes within two trigger intervals of its end even when no record arrives, as Flink's
timer fires at the end. (Spark's plain ``rate`` source would do the same, but it cannot run under
``available-now``: Spark falls back to one batch for the whole input.)

Under ``available-now`` the run ends once its input is read. A window the clock has not passed yet
stays in the checkpoint, and closes with what it holds in the first micro-batches of the next run,
as Flink fires the timers of windows that ended while a job was stopped when it restores it. (At the
end of a bounded input Flink drops them.)

``window_time`` and the legacy ``*_PROCTIME`` functions are written as the window's last instant,
``window_end - 1 ms``: Flink writes the moment of the emission, which no replay could repeat.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

#: The column holding a record's processing time.
PROCTIME = "_proctime"
#: Marks the clock's rows: true on a tick, false on a record.
TICK = "_tick"


def with_processing_time(spark: SparkSession, records: DataFrame) -> DataFrame:
    """The source's records, then the clock's ticks (``TICK``), each with its processing time in
    ``PROCTIME`` and a watermark on it. Drop the ticks after the watermark (:func:`is_record`)."""
    clock = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
    ticks = clock.select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in records.schema],
                         F.lit(True).alias(TICK))
    stream = records.withColumn(TICK, F.lit(False)).unionByName(ticks)
    return stream.withColumn(PROCTIME, F.current_timestamp()).withWatermark(PROCTIME, "0 milliseconds")


def is_record() -> Column:
    """True for a source record, false for a tick of the clock."""
    return ~F.col(TICK)

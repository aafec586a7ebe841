"""``CREATE TABLE ... WITH (...)`` options → Spark streaming readers and exactly-once batch writers.

Connectors:

* ``'connector' = 'filesystem'``, ``'path'``, ``'format'`` = csv | json | parquet. As a source, the
  directory is read as a stream of files with the DDL's column types. As a sink, every micro-batch
  is written by the tasks that computed it, one file per task with rows, named after the query,
  the batch and the task (``part-<query id>-<batch id>-<n>``), staged and then renamed into place: a
  batch replayed after a crash recomputes the same rows in the same tasks and replaces its own
  files, so once a batch is committed the directory holds no duplicate and no gap, and a fresh
  start (a new query id) never overwrites what an earlier deployment wrote. A sink declared
  ``PARTITIONED BY`` is refused by name: its directories would need a rename per partition value.
* ``'connector' = 'print'``: the console.
* ``'connector' = 'kafka'``: ``'properties.bootstrap.servers'``, ``'topic'``, ``'format'`` = json | csv,
  ``'scan.startup.mode'``. Needs the ``spark-sql-kafka-0-10`` package on the Spark classpath
  (``--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>``). Kafka sinks are
  at-least-once (Spark's Kafka writer cannot replace a batch).

Options prefixed ``spark.`` are passed to the Spark reader or writer unchanged (for example
``'spark.maxFilesPerTrigger' = '1'``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from stategate.analyzer.aggregates import ORDER_DIGITS
from stategate.analyzer.model import FILESYSTEM, KAFKA, Table
from stategate.analyzer.runnable import FILE_FORMATS, KAFKA_FORMATS, connector, file_format, option, spark_type
from stategate.spark_jobs import failpoints
from stategate.spark_jobs.expressions import quoted
from stategate.spark_jobs.state import ARRIVAL
from stategate.spark_jobs.storage import HadoopStorage

#: How file sinks write timestamps: Flink's SQL form. Sources give no pattern: Spark's
#: own parser reads that form (and ISO-8601) by hand-written code, where a pattern would parse every
#: value through java.time (1M bids, warmed up: 1.3 s without a pattern, 1.6-2.0 s with one).
TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"
_KAFKA_STARTUP = {"earliest-offset": "earliest", "latest-offset": "latest"}
#: A file sink's observed counts of a micro-batch: all its rows, and those of its first task.
_ROWS, _FIRST_TASK_ROWS = "rows", "first_task_rows"
#: How long a file sink waits for them once its batch is written (seconds). Spark sets them as the
#: write ends; should they never come, the micro-batch fails (the next start runs it again) rather
#: than hold the job while its heartbeat says it runs.
OBSERVED_WITHIN_S = 60.0
#: How a micro-batch is written into its own staging directory. The staging is private to the batch
#: and a replay overwrites it, so Hadoop's job commit need not be atomic: its tasks move their
#: files straight into it (algorithm 2, one rename per file where version 1 takes two) and no
#: _SUCCESS marker is written (a PUT per batch on object stores).
_COMMITTER = {"mapreduce.fileoutputcommitter.algorithm.version": "2",
              "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}

BatchWriter = Callable[[DataFrame, int], None]


def schema_ddl(table: Table) -> str:
    physical = [c for c in table.columns if c.computed is None]
    return ", ".join(f"{quoted(c.name)} {spark_type(c.type, c.name, table.name)}" for c in physical)


def _spark_options(table: Table) -> dict[str, str]:
    return {k[len("spark."):]: v for k, v in table.options.items() if k.startswith("spark.")}


# --------------------------------------------------------------------------------- sources
def read_stream(spark: SparkSession, table: Table, starting: Mapping[str, str] | None = None, *,
                files: Column | None = None, arrival: bool = False) -> DataFrame:
    """Table ``table`` as a stream; ``starting`` says where a Kafka source starts instead of its
    startup mode (a take-over's, :mod:`analyzer.cutover`), ``files`` which files a file source
    opens (on the source's own ``_metadata``: Spark never opens the others).

    With ``arrival`` each row says where it arrived from, in the column :data:`state.ARRIVAL`, for
    the aggregates that follow arrival order (``analyzer.aggregates.ARRIVAL``): its file's
    modification time, path and line, or its Kafka record's timestamp, partition and offset. Spark's CSV and JSON readers give a
    row no line number, so such a source is read a file to a row and cut into lines here: a file
    must then fit in one row (2 GB), and only jobs with those aggregates read this way."""
    if connector(table) == FILESYSTEM:
        fmt = file_format(table, FILE_FORMATS)
        if arrival and fmt != "parquet":
            return _numbered_lines(spark, table, fmt, files)
        reader = spark.readStream.schema(schema_ddl(table)).format(fmt)
        if fmt == "csv":
            reader = reader.options(**_csv_options(table))
        df = reader.options(**_spark_options(table)).load(option(table, "path"))
        if files is not None:
            df = df.where(files)
        if arrival:  # Parquet numbers its rows
            df = df.withColumn(ARRIVAL, _arrived(F.col("_metadata.file_modification_time"),
                                                 F.col("_metadata.file_path"), F.col("_metadata.row_index")))
        return df
    # A Kafka table: the only other connector analyzer.runnable lets a pipeline read.
    raw = spark.readStream.format("kafka").options(**kafka_source_options(table, starting)).load()
    return _decode(raw, table, arrival)


def _csv_options(table: Table) -> dict[str, str]:
    return {"sep": table.options.get("csv.field-delimiter", ","), "mode": "FAILFAST"}


def _arrived(modified: Column, path: Column, line: Column) -> Column:
    """Where a row of a file arrived from: the file's modification time, its path's hash in the
    digits an arrival keeps it in (``analyzer.aggregates.ORDER_DIGITS``), the row's line."""
    hashed = F.pmod(F.xxhash64(path), F.lit(10 ** ORDER_DIGITS[1]))
    return F.struct(modified.alias("t"), hashed.alias("f"), line.cast("long").alias("n"))


def _numbered_lines(spark: SparkSession, table: Table, fmt: str, files: Column | None) -> DataFrame:
    """A CSV or JSON-lines source read a file to a row, each line parsed with its number; blank
    lines are skipped, as Spark's own readers skip them."""
    options = _spark_options(table)
    text = spark.readStream.format("text").option("wholetext", "true").options(**options) \
        .load(option(table, "path"))
    if files is not None:
        text = text.where(files)
    # A file without a carriage return is cut at each line feed, which Java splits without a
    # regular expression; one with any is cut at CR LF too.
    cut = F.when(F.instr(F.col("value"), "\r") > 0, F.split(F.col("value"), r"\r?\n")) \
        .otherwise(F.split(F.col("value"), "\n"))
    lines = text.select(F.col("_metadata.file_modification_time").alias("_modified"),
                        F.col("_metadata.file_path").alias("_path"),
                        F.posexplode(cut).alias("_line", "_text"))
    lines = lines.where(F.col("_text") != "")
    if fmt == "csv":
        parsed = F.from_csv(F.col("_text"), schema_ddl(table), {**_csv_options(table), **options})
    else:
        parsed = F.from_json(F.col("_text"), schema_ddl(table), options)
    arrived = _arrived(F.col("_modified"), F.col("_path"), F.col("_line"))
    return lines.select(parsed.alias("_row"), arrived.alias(ARRIVAL)) \
        .select("_row.*", ARRIVAL)


def kafka_source_options(table: Table, starting: Mapping[str, str] | None = None) -> dict[str, str]:
    """Flink's Kafka table options as Spark's Kafka source options; ``starting`` replaces where it
    starts (Spark reads it on a query's first start only: a restart continues from its checkpoint)."""
    options = {
        "kafka.bootstrap.servers": option(table, "properties.bootstrap.servers"),
        "subscribe": option(table, "topic"),
        "startingOffsets": _KAFKA_STARTUP.get(table.options.get("scan.startup.mode", "earliest-offset"),
                                              "earliest"),
    }
    for key, value in table.options.items():
        if key.startswith("properties.") and key != "properties.bootstrap.servers":
            options["kafka." + key[len("properties."):]] = value
    options.update(_spark_options(table))
    options.update(starting or {})
    return options


def _decode(raw: DataFrame, table: Table, arrival: bool) -> DataFrame:
    fmt = file_format(table, KAFKA_FORMATS)
    text = F.col("value").cast("string")
    parsed = F.from_json(text, schema_ddl(table)) if fmt == "json" else F.from_csv(text, schema_ddl(table))
    if not arrival:
        return raw.select(parsed.alias("_row")).select("_row.*")
    # Offsets order a partition's records; records of different partitions, their timestamps.
    arrived = F.struct(F.col("timestamp").alias("t"), F.col("partition").cast("long").alias("f"),
                       F.col("offset").alias("n"))
    return raw.select(parsed.alias("_row"), arrived.alias(ARRIVAL)).select("_row.*", ARRIVAL)


# --------------------------------------------------------------------------------- sinks
@dataclass(frozen=True)
class FileSink:
    """Writes each micro-batch to ``<path>/part-<query id>-<batch id>.<format>``, replacing a replay."""

    path: str
    fmt: str
    options: dict[str, str]

    @cached_property
    def _counts(self) -> tuple[Column, Column]:
        """The counts each batch's write observes: its rows, and the first task's. Built once, not
        per micro-batch: each column is a round trip to the JVM."""
        return (F.count(F.lit(1)).alias(_ROWS),
                F.count(F.when(F.spark_partition_id() == 0, 1)).alias(_FIRST_TASK_ROWS))

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        storage = HadoopStorage(df.sparkSession)
        # The query id is stable across restarts of one checkpoint and new for a fresh one.
        query = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId") or "batch"
        name = f"part-{query}-{batch_id:012d}"
        # One staging directory per batch: an attempt killed half-way leaves it behind, the replay
        # overwrites it. Names starting with '_' are invisible to Spark's and Hadoop's readers.
        staging = f"{self.path}/_staging/{name}"
        # The batch is written in one action, its rows counted on the way: a second action (say,
        # a look whether it is empty) would run the batch's stateful aggregation again. The tasks
        # that computed the batch write it: squeezing it into one file first (repartition) cost a
        # shuffle stage more in every micro-batch. The first task's rows are counted apart: Spark
        # writes its file even when it has none (so that an empty job still leaves a schema), and
        # only tasks with rows get a file in the sink (readers such as pandas refuse an empty CSV
        # file). Counted, that file need not be read (its Parquet footer cost about 20 ms a batch).
        rows = Observation()
        writer = df.observe(rows, *self._counts) \
            .write.mode("overwrite").format(self.fmt).options(**_COMMITTER).options(**self.options)
        if self.fmt in ("csv", "json"):
            writer = writer.option("timestampFormat", TIMESTAMP_FORMAT)
        writer.save(staging)
        counted = observed(rows)
        if not counted[_ROWS]:
            storage.delete(staging)  # no window closed in this batch: no file
            return
        failpoints.reach("sink.staged")
        # Spark names a task's file part-<task number>-...: the same number on a replay.
        parts = sorted(p for p in storage.list(staging) if p.rsplit("/", 1)[-1].startswith("part-"))
        for part in parts:
            task = part.rsplit("/", 1)[-1].split("-")[1]
            if int(task) == 0 and not counted[_FIRST_TASK_ROWS]:
                continue  # deleted with the staging directory below
            # Replaces the file of an attempt that was killed before Spark committed the batch.
            storage.replace(part, f"{self.path}/{name}-{task}.{self.fmt}")
        failpoints.reach("sink.placed")
        storage.delete(staging)


def observed(observation: Observation, within_s: float = OBSERVED_WITHIN_S) -> dict[str, Any]:
    """The metrics of an observed action that has run; :class:`TimeoutError` when they do not come
    within ``within_s`` (PySpark's own ``get`` waits without a bound)."""
    assert observation._jo is not None, "observe a DataFrame first"
    future = observation._jo.future()
    deadline = time.monotonic() + within_s
    while not future.isCompleted():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the micro-batch's observed row counts did not come within {within_s:g} s "
                               "of its write")
        time.sleep(0.01)
    return observation.get


def print_sink(df: DataFrame, batch_id: int) -> None:
    print(f"-------- batch {batch_id} --------", flush=True)
    df.show(truncate=False, n=1000)


def kafka_sink_options(table: Table) -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": option(table, "properties.bootstrap.servers"),
        "topic": option(table, "topic"),
    }
    options.update(_spark_options(table))
    return options


def batch_writer(table: Table) -> BatchWriter:
    """The writer of a sink table (which :func:`analyzer.runnable.check_pipeline` has checked)."""
    kind = connector(table)
    if kind == FILESYSTEM:
        return FileSink(option(table, "path").rstrip("/"), file_format(table, FILE_FORMATS), _spark_options(table))
    if kind != KAFKA:
        return print_sink
    options = kafka_sink_options(table)
    fmt = file_format(table, KAFKA_FORMATS)

    def to_kafka(df: DataFrame, batch_id: int) -> None:
        columns = F.struct(*df.columns)
        value = F.to_json(columns) if fmt == "json" else F.to_csv(columns)
        df.select(value.alias("value")).write.format("kafka").options(**options).save()

    return to_kafka

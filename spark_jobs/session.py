"""The SparkSession every stategate job and test runs with."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.runnable import FIXED_SETTINGS
from stategate.analyzer.settings import DEFAULT_PARTITIONS, SHUFFLE_PARTITIONS
from stategate.spark_jobs.storage import is_local

#: Settings that change results or the checkpoint layout; fixed so that every run of a job agrees.
#: The number of state partitions is the job's default where it sets none (its parallelism,
#: analyzer.settings): Spark stores it in the checkpoint at the first run and keeps it on every restart.
JOB_CONF = {**FIXED_SETTINGS, SHUFFLE_PARTITIONS: DEFAULT_PARTITIONS}
#: How Spark writes a checkpoint on this machine's disk. Its default goes through Hadoop's
#: ``FileContext``, whose rename on the local file system starts a ``readlink`` process for each
#: path it looks at (every offset, commit and state file a micro-batch writes: 560 processes for one
#: Flink fixture's four queries, a quarter of its time); Hadoop's ``FileSystem`` renames with one
#: system call, as atomic on a local disk. Other file systems (HDFS, S3) keep Spark's choice.
LOCAL_CHECKPOINT_CONF = {"spark.sql.streaming.checkpointFileManagerClass":
                         "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"}


def get_session(app_name: str = "stategate", master: str | None = None) -> SparkSession:
    """A session for jobs: under spark-submit the master comes from the submitter, else local."""
    # Python workers must run the same interpreter (and so find pandas / pyarrow) as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not _under_submit():
        builder = builder.master("local[2]")
    for key, value in JOB_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    # PySpark's DataFrame debugging records, around every DataFrame and Column call, the Python line
    # that made it: about four more calls into the JVM each (F.col("a") + F.lit(1) took 3.2-4.7 ms
    # instead of 0.8-1.1 ms here). The lines would be stategate's own; its errors name the job's SQL.
    builder = builder.config("spark.python.sql.dataFrameDebugging.enabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def checkpoint_conf(checkpoint: str) -> dict[str, str]:
    """The Spark settings a streaming query whose checkpoint is ``checkpoint`` starts with."""
    return dict(LOCAL_CHECKPOINT_CONF) if is_local(checkpoint) else {}


def hold_checkpoint_conf(spark: SparkSession, checkpoint: str, settings: Mapping[str, str]) -> None:
    """Keep :data:`LOCAL_CHECKPOINT_CONF` on the session for a job whose checkpoint is on local disk
    and whose ``settings`` choose no file manager of their own, and take it off for any other.
    Unlike the job's settings, it stays after the queries start: Spark opens some of a query's
    checkpoint files (its file source's log, state files) with the settings of the session its
    DataFrame was built on, once the query runs (a quick `scale_bench` TUMBLE: 0.82 of Spark's own
    with the setting only while the queries start, 0.89-0.95 with it held)."""
    wanted = checkpoint_conf(checkpoint)
    for key, value in LOCAL_CHECKPOINT_CONF.items():
        if key in settings:
            continue
        if key in wanted:
            spark.conf.set(key, wanted[key])
        elif spark.conf.get(key, None) == value:
            spark.conf.unset(key)


def _under_submit() -> bool:
    """spark-submit starts the driver with a JVM gateway already up and the master configured."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def try_settings(spark: SparkSession, settings: Mapping[str, str], source: str) -> None:
    """Refuse, before anything starts, a job setting Spark fixes when it starts (it belongs on
    spark-submit's command line; those stategate fixes are refused from the model,
    :func:`analyzer.runnable.check_settings`). Spark's own rule decides (its SQL settings' registry
    does not know, for one, RocksDB's, which it reads at run time): each is set on the session, and
    the session's own values come back."""
    with job_settings(spark, settings, source):
        pass


@contextmanager
def job_settings(spark: SparkSession, settings: Mapping[str, str], source: str = "<sql>") -> Iterator[None]:
    """The job's Spark settings (:func:`analyzer.settings.spark_settings`) on the session while its
    queries start. Each streaming query runs with a copy of the session made when it starts (and
    its checkpoint keeps what its first batch ran with), so the session gets its own values back
    after, for the next job it runs (a test session, a tool)."""
    before: dict[str, str | None] = {}
    try:
        for key, value in settings.items():
            previous = spark.conf.get(key, None)
            try:
                spark.conf.set(key, value)
            except AnalysisException:
                raise SQLModelError(f"SET '{key}' = '{value}': a setting Spark fixes when it starts; pass it as "
                                    f"spark-submit --conf {key}={value}", source=source) from None
            before[key] = previous
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)

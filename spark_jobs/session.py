"""The SparkSession every stategate job and test runs with."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

#: Settings that change results or the checkpoint layout; fixed so that every run of a job agrees.
JOB_CONF = {
    # Flink's TIMESTAMP has no zone: read and print wall-clock values unchanged.
    "spark.sql.session.timeZone": "UTC",
    # Stored in the checkpoint at the first run; a restart must use the same number.
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.streaming.stateStore.stateSchemaCheck": "true",
}


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
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _under_submit() -> bool:
    """spark-submit starts the driver with a JVM gateway already up and the master configured."""
    return "PYSPARK_GATEWAY_PORT" in os.environ

"""Sinks and sources: exactly-once file output across a crash, and the Kafka option mapping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stategate.analyzer import build
from stategate.spark_jobs.connectors import kafka_sink_options, kafka_source_options, observed, schema_ddl
from stategate.spark_jobs.job import run
from tests.spark_jobs.helpers import BID_COLUMNS, CLOSER, DATA

ROOT = Path(__file__).resolve().parents[2]


def job(source: Path, sink: Path, files_a_batch: int = 1) -> str:
    return f"""
CREATE TABLE Bid ({BID_COLUMNS},
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
  'spark.maxFilesPerTrigger' = '{files_a_batch}');
CREATE TABLE Totals (window_start TIMESTAMP(3), supplier_id STRING, total DECIMAL(38, 2), bids BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'parquet');
INSERT INTO Totals
SELECT window_start, supplier_id, SUM(price), COUNT(*)
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))
GROUP BY supplier_id, window_start, window_end;
"""


def split_bids(directory: Path) -> None:
    """The seed bids, one file per bid, so that each micro-batch closes a window.

    Spark reads new files in modification-time order; files written within the same clock tick
    would come in any order and later bids would make earlier ones late, so the times are set."""
    directory.mkdir(parents=True)
    lines = (DATA / "bids" / "bids.csv").read_text().splitlines(keepends=True) + [CLOSER]
    for index, line in enumerate(lines):
        path = directory / f"{index:02d}.csv"
        path.write_text(line)
        os.utime(path, (1_600_000_000 + index, 1_600_000_000 + index))


def read(sink: Path) -> list[tuple]:
    frame = pd.read_parquet(sink)
    return sorted(tuple(str(v) for v in row) for row in frame.itertuples(index=False))


def test_file_sink_is_exactly_once_across_a_crash(spark, tmp_path) -> None:
    source, sink, checkpoint = tmp_path / "bids", tmp_path / "out", tmp_path / "checkpoint"
    split_bids(source)
    run(spark, job(source, sink), checkpoint)
    expected = read(sink)
    assert len(expected) == 5 and len(list(sink.glob("part-*.parquet"))) >= 3

    # A crash after the batch wrote its file but before Spark committed it: the batch is replayed.
    commits = sorted((p for p in (checkpoint / "Totals" / "commits").iterdir() if p.name.isdigit()),
                     key=lambda p: int(p.name))
    replayed = [c for c in commits if any(sink.glob(f"part-*-{int(c.name):012d}-*.parquet"))][-1]
    replayed.unlink()
    replayed.with_name(f".{replayed.name}.crc").unlink(missing_ok=True)
    (sink / "_staging" / "batch-crashed").mkdir(parents=True)  # debris a killed writer leaves
    run(spark, job(source, sink), checkpoint)
    assert read(sink) == expected, "a replayed batch replaces its files: no duplicate, no gap"


def test_the_job_runs_as_a_module(tmp_path) -> None:
    source, sink = tmp_path / "bids", tmp_path / "out"
    split_bids(source)
    script = tmp_path / "job.sql"
    script.write_text(job(source, sink, files_a_batch=100))
    command = [sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(script), "--checkpoint",
               str(tmp_path / "checkpoint"), "--master", "local[1]"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ran (FRESH)" in result.stdout
    assert ("2020-04-15 08:05:00", "supplier1", "6.00", "2") in read(sink)

    # A refusal exits 3 (its cases, in process: test_guard.py), bad SQL 2.
    script.write_text(job(source, sink, files_a_batch=100).replace("'5' MINUTES", "'10' MINUTES"))
    refused = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 3 and "verdict INCOMPATIBLE" in refused.stderr

    script.write_text("SELECT FROM WHERE")
    invalid = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert invalid.returncode == 2 and f"{script}:1" in invalid.stderr


KAFKA = """
CREATE TABLE Bids (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '2' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'bids', 'properties.bootstrap.servers' = 'broker:9092',
      'properties.group.id' = 'stategate', 'scan.startup.mode' = 'latest-offset', 'format' = 'json',
      'spark.maxOffsetsPerTrigger' = '1000');
CREATE TABLE Out (item STRING, total DECIMAL(38, 2))
WITH ('connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = 'broker:9092', 'format' = 'json');
"""


def test_kafka_options_map_to_spark_kafka_options() -> None:
    tables = build(KAFKA).tables
    assert kafka_source_options(tables["Bids"]) == {
        "kafka.bootstrap.servers": "broker:9092",
        "subscribe": "bids",
        "startingOffsets": "latest",
        "kafka.group.id": "stategate",
        "maxOffsetsPerTrigger": "1000",
    }
    assert kafka_sink_options(tables["Out"]) == {"kafka.bootstrap.servers": "broker:9092", "topic": "totals"}
    assert schema_ddl(tables["Bids"]) == "`bidtime` TIMESTAMP, `price` DECIMAL(10, 2), `item` STRING"


def test_kafka_options_are_required() -> None:
    from stategate.analyzer import SQLModelError

    table = build(KAFKA.replace("'topic' = 'bids', ", "")).tables["Bids"]
    with pytest.raises(SQLModelError, match="needs the option 'topic'"):
        kafka_source_options(table)


def test_a_statement_set_runs_each_insert_as_its_pipeline(spark, tmp_path) -> None:
    """Flink's multi-sink form, ``EXECUTE STATEMENT SET BEGIN ... END;``, gives the rows of the same
    INSERTs written one after the other."""
    from tests.spark_jobs.crashes import job_script, sink_rows, write_bids

    plain, wrapped = tmp_path / "plain", tmp_path / "wrapped"
    for root in (plain, wrapped):
        write_bids(root / "incoming", files=1, rows_per_file=30)
    run(spark, job_script(plain), plain / "checkpoint")
    script = job_script(wrapped)
    first = script.index("INSERT INTO")
    run(spark, f"{script[:first]}EXECUTE STATEMENT SET BEGIN\n{script[first:]}\nEND;\n", wrapped / "checkpoint")
    expected = sink_rows(plain)
    assert all(expected.values()) and sink_rows(wrapped) == expected


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_only_tasks_with_rows_leave_a_file(spark, tmp_path, fmt: str) -> None:
    """Spark writes the first task's file even when that task had no row: a 0-byte CSV that
    ``pandas.read_csv`` refuses. Here the two closed windows land in other tasks (of four, by
    Spark's hash of the group key and window: tasks 1 and 3 for supplier ``d``), so the first task
    has none: it must leave no file."""
    source, sink = tmp_path / "bids", tmp_path / "out"
    source.mkdir()
    (source / "bids.csv").write_text("2020-04-15 08:01:00,2.00,A,d\n2020-04-15 08:07:00,3.00,B,d\n" + CLOSER)
    run(spark, job(source, sink).replace("'format' = 'parquet'", f"'format' = '{fmt}'"), tmp_path / "checkpoint")
    parts = sorted(sink.glob("part-*"))
    assert parts and not [p for p in parts if p.name.endswith(f"-00000.{fmt}")], "the first task had no row"
    read = {"csv": lambda p: pd.read_csv(p, header=None), "json": lambda p: pd.read_json(p, lines=True),
            "parquet": pd.read_parquet}[fmt]
    assert all(part.stat().st_size for part in parts)
    assert sum(len(read(part)) for part in parts) == 2


def test_a_write_whose_row_counts_never_come_fails_its_batch(spark) -> None:
    """A file sink reads what its write observed to know which files to place; counts that never
    come (here: no action ran) fail the micro-batch within the bound instead of holding the job,
    and counts of a write that ran are read as they are."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    waiting, ran = Observation(), Observation()
    spark.range(3).observe(waiting, F.count(F.lit(1)).alias("rows"))
    with pytest.raises(TimeoutError, match="did not come within 0.2 s"):
        observed(waiting, within_s=0.2)
    spark.range(5).observe(ran, F.count(F.lit(1)).alias("rows")).collect()
    assert observed(ran, within_s=0.2) == {"rows": 5}

"""HOP and CUMULATE windows assembled per micro-batch from retained slices equal the windows Spark
computes in one pass over all the data, whatever the window's size / slide and the batch borders."""

from __future__ import annotations

import math
import os
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from stategate.spark_jobs.assembly import SLICES_DIR
from tests.spark_jobs.helpers import BID_COLUMNS, collect_run

START = datetime(2026, 3, 1, 9, 0)


def write_bids(source: Path, files: int = 6, per_file: int = 60, seed: int = 3) -> None:
    """Bids over three hours, one file per micro-batch, a few out of order; then a closing bid."""
    rng = random.Random(seed)
    source.mkdir(parents=True)
    minutes = 180 / (files * per_file)
    for index in range(files):
        lines = []
        for i in range(index * per_file, (index + 1) * per_file):
            ts = START + timedelta(minutes=i * minutes, seconds=rng.randint(-20, 20))
            lines.append(f"{ts:%Y-%m-%d %H:%M:%S},{rng.randint(100, 9999) / 100:.2f},"
                         f"{rng.choice('AB')},s{rng.randrange(4)}\n")
        path = source / f"{index:02d}.csv"
        path.write_text("".join(lines))
        os.utime(path, (1_700_000_000 + index,) * 2)  # the file source reads in modification order
    closer = source / "99-closer.csv"
    closer.write_text(f"{START + timedelta(days=3):%Y-%m-%d %H:%M:%S},0.00,Z,closer\n")
    os.utime(closer, (1_700_000_000 + files,) * 2)


def job(source: Path, tvf: str) -> str:
    return (f"CREATE TABLE Bid ({BID_COLUMNS},\n  WATERMARK FOR bidtime AS bidtime - INTERVAL '30' SECOND)\n"
            f"WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',"
            " 'spark.maxFilesPerTrigger' = '1');\n"
            "SELECT window_start, window_end, supplier_id, COUNT(*), SUM(price), MIN(price), MAX(item)\n"
            f"FROM TABLE({tvf})\nGROUP BY supplier_id, window_start, window_end;")


def _minutes(line: str) -> int:
    """Minutes since the epoch of a bid line's time."""
    return int((datetime.fromisoformat(line.split(",")[0]) - datetime(1970, 1, 1)).total_seconds() // 60)


def reference(spark, source: Path, size_min: int, slide_min: int, cumulate: bool) -> list[tuple]:
    """Spark's own sliding windows over all the bids at once (cumulative: each window's period only)."""
    bids = spark.read.schema("bidtime TIMESTAMP, price DECIMAL(10, 2), item STRING, supplier_id STRING") \
        .csv(str(source)).where(F.col("supplier_id") != "closer")
    step = slide_min
    windows = bids.select("*", F.window("bidtime", f"{size_min} minutes", f"{step} minutes").alias("w"))
    start = F.col("w.start")
    if cumulate:
        size_us = size_min * 60_000_000
        start = F.timestamp_micros(F.floor((F.unix_micros("w.end") - 1) / size_us) * size_us)
        windows = windows.where(F.col("bidtime") >= start)
    rows = windows.groupBy(start.alias("ws"), F.col("w.end").alias("we"), "supplier_id").agg(
        F.count(F.lit(1)), F.sum("price"), F.min("price"), F.max("item")).collect()
    return sorted(tuple("NULL" if v is None else str(v) for v in row) for row in rows)


@pytest.mark.parametrize("tvf, size, slide, cumulate", [
    pytest.param("HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '90' MINUTES)", 90, 1, False,
                 id="hop-90-every-1"),
    pytest.param("HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE, INTERVAL '25' MINUTES)", 25, 10, False,
                 id="hop-slice-is-the-gcd"),
    pytest.param("CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTE, INTERVAL '60' MINUTES)", 60, 5, True,
                 id="cumulate-5-in-60"),
])
def test_assembled_windows_equal_one_pass_over_all_the_data(spark, tmp_path, tvf, size, slide, cumulate) -> None:
    source = tmp_path / "bids"
    write_bids(source)
    rows, result = collect_run(spark, job(source, tvf), tmp_path / "checkpoint")
    assert [r[:3] for r in rows if r[2] == "closer"] == []
    expected = reference(spark, source, size, slide, cumulate)
    assert len(expected) > 50
    assert [r[:3] + (r[3], r[4].rstrip("0"), r[5], r[6]) for r in rows] == \
        [e[:3] + (e[3], e[4].rstrip("0"), e[5], e[6]) for e in expected]
    # Stage 1 runs once per batch: its state is updated once for each supplier and slice the batch's
    # file holds (assembling the windows must read the cached slices, not run the aggregation again).
    slice_min = math.gcd(size, slide)
    files = sorted(source.glob("*.csv"), key=lambda f: f.stat().st_mtime)
    groups = [len({(line.split(",")[3], _minutes(line) // slice_min) for line in f.read_text().splitlines()})
              for f in files]
    progress = result.queries[0].recentProgress
    updated = [p["stateOperators"][0]["numRowsUpdated"] for p in progress if p["numInputRows"]]
    assert updated == groups
    # Side state: each batch writes only the slices it adds that a later window still holds, never
    # what earlier batches retained, so each slice is written once (this job's batches read fewer
    # than BASE_EVERY entries: no base).
    log = tmp_path / "checkpoint" / "select#1" / SLICES_DIR
    written = [spark.read.parquet(str(p)).count() for p in log.iterdir() if p.name.endswith(".delta")]
    assert len(written) == len(progress) and 0 < sum(written) <= sum(groups)

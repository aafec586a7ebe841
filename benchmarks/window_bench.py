"""Window slicing and the state layout, measured beside Spark's built-in window aggregation.

For each window kind the same bid files are processed, alternating, by what a Spark user would write
by hand (``groupBy(window(ts, size, slide), key).agg(...)``) and by stategate's compiled job, with
the same trigger. Printed per kind: input rows per second, the ratio stategate / built-in, the peak
state rows and state memory (from the streaming query progress), and whether both produced the same
rows (a mismatch fails the run). Then a restart benchmark: resuming after a PARTIAL change against
clearing the state and replaying the retained input.

Both engines first run once on a single file (JIT and Python workers warm), then each case runs
``--repeat`` times, alternating built-in and stategate, and the best time of each is reported: short
streaming runs on a shared machine vary by tens of percent from run to run.

    .venv/bin/python benchmarks/window_bench.py [--rows 150000] [--keys 100] [--minutes 120] [--files 8] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from spark_jobs.job import run  # noqa: E402
from spark_jobs.session import get_session  # noqa: E402

START = datetime(2026, 1, 1)
SCHEMA = "bidtime TIMESTAMP, price DECIMAL(10, 2), supplier STRING"
AGGREGATES = "COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS top"


@dataclass(frozen=True)
class Case:
    name: str
    tvf: str  # the window TVF of the stategate job
    builtin: Callable[[DataFrame], DataFrame]  # the hand-written Spark equivalent


def _agg(frame: DataFrame, window) -> DataFrame:
    return frame.groupBy(window.alias("w"), "supplier").agg(
        F.count(F.lit(1)).alias("bids"), F.sum("price").cast("decimal(38,2)").alias("total"),
        F.max("price").alias("top"))


def _cumulate(frame: DataFrame, step: str, size_min: int) -> DataFrame:
    # Spark has no cumulative window: every record joins the size/step sliding windows that end
    # in its period, and counts only where it is at or after the cumulative window's start.
    sliding = frame.select("*", F.window("bidtime", f"{size_min} minutes", step).alias("w"))
    size_us = size_min * 60_000_000
    start = F.timestamp_micros(F.floor((F.unix_micros("w.end") - 1) / size_us) * size_us)
    inside = F.col("bidtime") >= start
    return sliding.groupBy("w", "supplier").agg(
        F.count(F.when(inside, 1)).alias("bids"),
        F.sum(F.when(inside, F.col("price"))).cast("decimal(38,2)").alias("total"),
        F.max(F.when(inside, F.col("price"))).alias("top"),
    ).where(F.col("bids") > 0).select(F.struct(start.alias("start"), F.col("w.end").alias("end")).alias("w"),
                                        "supplier", "bids", "total", "top")


CASES = [
    Case("TUMBLE 1 min", "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)",
         lambda f: _agg(f, F.window("bidtime", "1 minute"))),
    Case("HOP 10 min / 1 min", "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '10' MINUTES)",
         lambda f: _agg(f, F.window("bidtime", "10 minutes", "1 minute"))),
    Case("HOP 60 min / 1 min", "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)",
         lambda f: _agg(f, F.window("bidtime", "60 minutes", "1 minute"))),
    Case("CUMULATE 1 min / 60 min",
         "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)",
         lambda f: _cumulate(f, "1 minute", 60)),
    Case("SESSION 2 min gap", "SESSION(TABLE Bid PARTITION BY supplier, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)",
         lambda f: _agg(f, F.session_window("bidtime", "2 minutes"))),
]


def generate(directory: Path, rows: int, keys: int, minutes: int, files: int, seed: int = 7) -> None:
    """Bids in event-time order, a few seconds out of order, split into files read one per batch."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    per_file = rows // files
    step = minutes * 60 / rows
    for index in range(files):
        lines = []
        for i in range(index * per_file, (index + 1) * per_file):
            ts = START + timedelta(seconds=i * step + rng.uniform(0, 2))
            # Sessions need gaps: each supplier bids in bursts.
            supplier = f"s{(i // 37) % keys if rng.random() < 0.8 else rng.randrange(keys):04d}"
            lines.append(f"{ts:%Y-%m-%d %H:%M:%S}.{ts.microsecond // 1000:03d},{rng.uniform(1, 100):.2f},{supplier}\n")
        path = directory / f"bids-{index:03d}.csv"
        path.write_text("".join(lines))
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    closer = directory / "zz-closer.csv"
    closer.write_text(f"{START + timedelta(days=2):%Y-%m-%d %H:%M:%S},0.00,closer\n")
    os.utime(closer, (1_700_000_000 + files, 1_700_000_000 + files))


def job_sql(source: Path, tvf: str, aggregates: str = AGGREGATES) -> str:
    return (f"CREATE TABLE Bid ({SCHEMA.replace('TIMESTAMP', 'TIMESTAMP(3)')},\n"
            "  WATERMARK FOR bidtime AS bidtime - INTERVAL '5' SECOND)\n"
            f"WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',"
            " 'spark.maxFilesPerTrigger' = '1');\n"
            f"SELECT window_start, window_end, supplier, {aggregates}\nFROM TABLE({tvf})\n"
            "GROUP BY supplier, window_start, window_end;")


@dataclass
class Measured:
    seconds: float
    input_rows: int
    state_rows: int
    state_bytes: int
    output: Path

    @property
    def rate(self) -> float:
        return self.input_rows / self.seconds


def _state(query) -> tuple[int, int, int]:
    """Input rows, and the peak state rows and bytes over the run's micro-batches (all operators)."""
    progress = [p for p in query.recentProgress if p]
    inputs = sum(p["numInputRows"] for p in progress)
    rows = max((sum(o["numRowsTotal"] for o in p["stateOperators"]) for p in progress), default=0)
    memory = max((sum(o["memoryUsedBytes"] for o in p["stateOperators"]) for p in progress), default=0)
    return inputs, rows, memory


def run_builtin(spark: SparkSession, case: Case, source: Path, work: Path) -> Measured:
    output = work / "builtin-out"
    shutil.rmtree(output, ignore_errors=True)
    shutil.rmtree(work / "builtin-ck", ignore_errors=True)
    frame = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).csv(str(source))
             .withWatermark("bidtime", "5 seconds"))
    result = case.builtin(frame).select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                                        "supplier", "bids", "total", "top")
    started = time.perf_counter()
    query = (result.writeStream.outputMode("append").format("parquet").option("path", str(output))
             .option("checkpointLocation", str(work / "builtin-ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    return Measured(seconds, *_state(query), output)


def run_stategate(spark: SparkSession, sql: str, checkpoint: Path, output: Path,
                  resume: bool = False) -> Measured:
    """Run the compiled job; from scratch, or with ``resume`` from the checkpoint a run left."""
    if not resume:
        shutil.rmtree(output, ignore_errors=True)
        shutil.rmtree(checkpoint, ignore_errors=True)

    def write(frame: DataFrame, batch_id: int) -> None:
        frame.write.mode("append").parquet(str(output))

    started = time.perf_counter()
    result = run(spark, sql, checkpoint, writers={"select#1": write})
    seconds = time.perf_counter() - started
    return Measured(seconds, *_state(result.queries[0]), output)


def best(runs: list[Measured]) -> Measured:
    return min(runs, key=lambda m: m.seconds)


def warm_up(spark: SparkSession, source: Path, work: Path) -> None:
    single = work / "warm-up"
    single.mkdir()
    shutil.copy2(next(iter(sorted(source.iterdir()))), single)
    run_builtin(spark, CASES[2], single, work)
    run_stategate(spark, job_sql(single, CASES[2].tvf), work / "warm-ck", work / "warm-out")


def same_rows(spark: SparkSession, left: Path, right: Path) -> tuple[bool, int]:
    columns = ["window_start", "window_end", "supplier", "bids", "total", "top"]
    a = spark.read.parquet(str(left)).select(*columns)
    b = spark.read.parquet(str(right)).select(*columns).where(F.col("supplier") != "closer")
    a = a.where(F.col("supplier") != "closer")
    return a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty(), a.count()


def restart_benchmark(spark: SparkSession, source: Path, work: Path, files: int) -> None:
    """Resume after a PARTIAL change vs clear the state and replay the retained input."""
    tvf = CASES[2].tvf
    half = work / "half"
    half.mkdir()
    all_files = sorted(source.iterdir())
    for path in all_files[: files // 2]:
        shutil.copy2(path, half / path.name)
    v1 = job_sql(half, tvf, "COUNT(*) AS bids, SUM(price) AS total")
    v2 = job_sql(half, tvf, "COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS top")
    run_stategate(spark, v1, work / "resume-ck", work / "resume-v1")
    for path in all_files[files // 2:]:
        shutil.copy2(path, half / path.name)
    resumed = run_stategate(spark, v2, work / "resume-ck", work / "resume-v2", resume=True)
    replayed = run_stategate(spark, v2, work / "replay-ck", work / "replay-v2")
    print(f"\nrestart after a PARTIAL change ({CASES[2].name}, second half of the input arriving):")
    print(f"  resume from the checkpoint   {resumed.seconds:7.1f} s  ({resumed.input_rows:,} rows read)")
    print(f"  clear state, replay input    {replayed.seconds:7.1f} s  ({replayed.input_rows:,} rows read)")
    print(f"  replay / resume              {replayed.seconds / resumed.seconds:7.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--minutes", type=int, default=120)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs per case; the best counts")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="stategate-bench-"))
    try:
        source = work / "bids"
        generate(source, args.rows, args.keys, args.minutes, args.files)
        spark = get_session("stategate-bench", master="local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        print(f"{args.rows:,} bids, {args.keys} suppliers, {args.minutes} min of event time, "
              f"{args.files} files (one per micro-batch), local[2], best of {args.repeat}\n")
        warm_up(spark, source, work)
        print(f"{'window':<26}{'built-in rows/s':>16}{'stategate rows/s':>18}{'ratio':>7}"
              f"{'peak state rows b/s':>22}{'state MB b/s':>15}  same rows")
        failures = 0
        for case in CASES:
            if args.only and args.only not in case.name:
                continue
            case_dir = work / case.name.replace(" ", "_").replace("/", "-")
            case_dir.mkdir()
            builtins, ours_runs = [], []
            for _ in range(args.repeat):
                builtins.append(run_builtin(spark, case, source, case_dir))
                ours_runs.append(run_stategate(spark, job_sql(source, case.tvf), case_dir / "sg-ck",
                                               case_dir / "sg-out"))
            builtin, ours = best(builtins), best(ours_runs)
            same, count = same_rows(spark, builtin.output, ours.output)
            failures += not same
            print(f"{case.name:<26}{builtin.rate:>16,.0f}{ours.rate:>18,.0f}{ours.rate / builtin.rate:>7.2f}"
                  f"{f'{builtin.state_rows:,}/{ours.state_rows:,}':>22}"
                  f"{f'{builtin.state_bytes / 1e6:.1f}/{ours.state_bytes / 1e6:.1f}':>15}  "
                  f"{'yes' if same else 'NO'} ({count:,} windows)")
        if not args.only:
            restart_benchmark(spark, source, work, args.files)
        if failures:
            print(f"\nFAILED: {failures} case(s) produced different rows", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""The state layout and window slicing, measured beside Spark's built-in window aggregation.

For each window kind the same bid files are processed by what a Spark user would write by hand
(``groupBy(window(ts, size, slide), key).agg(...)``, 4 shuffle partitions) and by stategate's
compiled job (``INSERT INTO`` a parquet sink). Each run is a whole process, as ``spark-submit``
starts it (JVM start included); the two engines alternate, and the best of ``--repeat`` runs of
each counts. Printed per case: seconds, input rows per second, the ratio (built-in time /
stategate time: above 1 stategate is faster), the peak state rows of each, and whether both wrote
the same rows (a mismatch fails the run). A built-in run that exceeds ``--cap`` seconds is stopped
and its ratio reported as a lower bound (``>``). With ``--profile``, each best run also says where
its query time went, from Spark's streaming progress (the micro-batches' jobs, Spark's bookkeeping
per batch, and building and starting the query).

    .venv/bin/python benchmarks/window_bench.py [--rows 1000000 --keys 500 --minutes 180 --files 10]
        [--wide-rows 200000 --wide-keys 100] [--repeat 3] [--cap 600] [--only NAME] [--profile]
        [--slots N]

``--slots`` sets the width of stategate's state buffer: with as many slots as the job has
aggregates (3) it keeps no headroom, so the run shows what the headroom costs (an added aggregate
then does not fit: the gate says INCOMPATIBLE instead of PARTIAL).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from stategate.analyzer.layout import SLOTS_SETTING

ROOT = Path(__file__).resolve().parents[1]

START = datetime(2026, 1, 1)
SCHEMA = "bidtime TIMESTAMP, price DECIMAL(10, 2), supplier STRING"
COLUMNS = ["window_start", "window_end", "supplier", "bids", "total", "top"]


@dataclass(frozen=True)
class Top:
    """The aggregate of price a case writes as ``top``: its sink type, its call in the job, and
    Spark's own equivalent (SQL over the column ``{}``). Where Spark's own gives another value
    (``differs``: ``first`` and ``collect_list`` take whatever order rows meet in, and
    ``approx_count_distinct`` is another sketch) the runs are held to the same windows, counts and
    sums, not the same ``top``."""

    sink_type: str
    call: str
    builtin: str
    differs: bool = False
    builtin_type: str = ""  # the type of Spark's own, where it is not the sink's

    @property
    def spark_type(self) -> str:
        return self.builtin_type or self.sink_type


TOPS = {
    "MAX": Top("DECIMAL(10, 2)", "MAX(price)", "max({})"),
    "STDDEV_POP": Top("DECIMAL(38, 6)", "STDDEV_POP(price)", "stddev_pop({})"),
    "FIRST_VALUE": Top("DECIMAL(10, 2)", "FIRST_VALUE(price)", "first({}, true)", differs=True),
    "LISTAGG": Top("STRING", "LISTAGG(CAST(price AS STRING))", "array_join(collect_list(CAST({} AS STRING)), ',')",
                   differs=True),
    "ARRAY_AGG": Top("ARRAY<DECIMAL(10, 2)>", "ARRAY_AGG(price)", "collect_list({})", differs=True),
    "JSON_ARRAYAGG": Top("STRING", "JSON_ARRAYAGG(price)", "to_json(collect_list({}))", differs=True),
    # Flink's MULTISET: stategate keeps the list and counts each value when the window closes; Spark
    # has no multiset aggregate, and its list is what a user would keep.
    "COLLECT": Top("MULTISET<DECIMAL(10, 2)>", "COLLECT(price)", "collect_list({})", differs=True,
                   builtin_type="ARRAY<DECIMAL(10, 2)>"),
    # Each bid's price under its time (no two bids share a millisecond: generate()); Spark's own
    # keeps the pairs in a list and writes them as a map.
    "JSON_OBJECTAGG": Top("STRING", "JSON_OBJECTAGG(KEY CAST(bidtime AS STRING) VALUE price)",
                          "to_json(map_from_entries(collect_list(struct(CAST(bidtime AS STRING), {}))))",
                          differs=True),
    # VVR's default accuracy, 0.99, against Spark's HyperLogLog++ at the same relative error.
    "APPROX_COUNT_DISTINCT": Top("BIGINT", "APPROX_COUNT_DISTINCT(price)", "approx_count_distinct({}, 0.01)",
                                 differs=True),
}


@dataclass(frozen=True)
class Case:
    name: str
    tvf: str  # the window TVF of the stategate job
    kind: str  # the built-in equivalent: tumble | hop | cumulate | session
    size_min: int
    slide_min: int = 0
    wide: bool = False  # run on the smaller data set (the built-in side fans out size/slide-fold)
    top: str = "MAX"  # the third aggregate (:data:`TOPS`)
    #: a cascade: the TVF of the window whose rows (per supplier, ``Minutes``) ``tvf`` aggregates
    inner: str = ""


TUMBLE_1 = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)"
HOP_60 = "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)"

CASES = [
    Case("TUMBLE 1 min", TUMBLE_1, "tumble", 1),
    Case("HOP 60 min / 1 min", HOP_60, "hop", 60, 1),
    Case("CUMULATE 1 min / 60 min",
         "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)", "cumulate", 60, 1),
    Case("SESSION 2 min gap", "SESSION(TABLE Bid PARTITION BY supplier, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)",
         "session", 2),
    # A cascade: each supplier's minutes, then their 10-minute windows (the built-in side chains
    # two aggregations through window_time, as Spark 3.4+ allows).
    Case("TUMBLE 1 min into TUMBLE 10 min", "TUMBLE(TABLE Minutes, DESCRIPTOR(t), INTERVAL '10' MINUTES)", "cascade",
         10, inner=TUMBLE_1),
    Case("HOP 1440 min / 1 min",
         "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '1440' MINUTES)", "hop", 1440, 1, True),
    Case("CUMULATE 1 min / 1440 min",
         "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '1440' MINUTES)",
         "cumulate", 1440, 1, True),
    # Every other aggregate as the third, on TUMBLE and HOP (the two).
    *(case for top in TOPS if top != "MAX" for case in (
        Case(f"TUMBLE 1 min {top}", TUMBLE_1, "tumble", 1, top=top),
        Case(f"HOP 60 min / 1 min {top}", HOP_60, "hop", 60, 1, top=top))),
]


def builtin_frame(case: Case, frame):
    """What a Spark user writes by hand for the case."""
    from pyspark.sql import functions as F

    chosen = TOPS[case.top]

    def top(value: str):
        return F.expr(chosen.builtin.format(value)).cast(chosen.spark_type).alias("top")

    def agg(grouped_frame, window):
        return grouped_frame.groupBy(window.alias("w"), "supplier").agg(
            F.count(F.lit(1)).alias("bids"), F.sum("price").cast("decimal(38,2)").alias("total"), top("price"))

    if case.kind == "tumble":
        return agg(frame, F.window("bidtime", f"{case.size_min} minutes"))
    if case.kind == "cascade":
        minutes = frame.groupBy(F.window("bidtime", "1 minute").alias("m"), "supplier").agg(
            F.count(F.lit(1)).alias("n"), F.sum("price").alias("s"), F.max("price").alias("x"))
        return minutes.groupBy(F.window(F.window_time("m"), f"{case.size_min} minutes").alias("w"), "supplier").agg(
            F.sum("n").alias("bids"), F.sum("s").cast("decimal(38,2)").alias("total"),
            F.max("x").cast(chosen.spark_type).alias("top"))
    if case.kind == "hop":
        return agg(frame, F.window("bidtime", f"{case.size_min} minutes", f"{case.slide_min} minutes"))
    if case.kind == "session":
        return agg(frame, F.session_window("bidtime", f"{case.size_min} minutes"))
    # Spark has no cumulative window: every record joins the size/step sliding windows that end
    # in its period, and counts only where it is at or after the cumulative window's start.
    sliding = frame.select("*", F.window("bidtime", f"{case.size_min} minutes", f"{case.slide_min} minutes")
                           .alias("w"))
    size_us = case.size_min * 60_000_000
    start = F.timestamp_micros(F.floor((F.unix_micros("w.end") - 1) / size_us) * size_us)
    inside = F.col("bidtime") >= start
    return sliding.withColumn("inside_price", F.when(inside, F.col("price"))).groupBy("w", "supplier").agg(
        F.count(F.when(inside, 1)).alias("bids"),
        F.sum("inside_price").cast("decimal(38,2)").alias("total"),
        top("inside_price"),
    ).where(F.col("bids") > 0).select(F.struct(start.alias("start"), F.col("w.end").alias("end")).alias("w"),
                                        "supplier", "bids", "total", "top")


def generate(directory: Path, rows: int, keys: int, minutes: int, files: int, seed: int = 7) -> None:
    """Bids in event-time order, a few seconds out of order, split into files read one per batch.
    No two bids share a millisecond (a later one moves to the next free one), so a bid's time is a
    key JSON_OBJECTAGG can take."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    per_file = rows // files
    step = minutes * 60 / rows
    taken: set[int] = set()  # the milliseconds of the last few seconds' bids
    for index in range(files):
        lines = []
        for i in range(index * per_file, (index + 1) * per_file):
            at = int((i * step + rng.uniform(0, 2)) * 1000)
            while at in taken:
                at += 1
            taken.add(at)
            if len(taken) > 100_000:  # bids more than the jitter apart cannot meet
                taken = {t for t in taken if t > (i * step - 3) * 1000}
            ts = START + timedelta(milliseconds=at)
            # Sessions need gaps: each supplier bids in bursts.
            supplier = f"s{(i // 37) % keys if rng.random() < 0.8 else rng.randrange(keys):04d}"
            lines.append(f"{ts:%Y-%m-%d %H:%M:%S}.{ts.microsecond // 1000:03d},{rng.uniform(1, 100):.2f},{supplier}\n")
        path = directory / f"bids-{index:03d}.csv"
        path.write_text("".join(lines))
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    closer = directory / "zz-closer.csv"
    closer.write_text(f"{START + timedelta(days=2):%Y-%m-%d %H:%M:%S},0.00,closer\n")
    os.utime(closer, (1_700_000_000 + files, 1_700_000_000 + files))


def job_sql(source: Path, output: Path, tvf: str, slots: int | None = None, top: str = "MAX", inner: str = "") -> str:
    """The stategate job; with ``inner``, a cascade: ``tvf`` over the supplier's windows of ``inner``."""
    width = f"SET '{SLOTS_SETTING}' = '{slots}';\n" if slots else ""
    aggregates = f"COUNT(*) AS bids, SUM(price) AS total, {TOPS[top].call} AS top"
    minutes = ""
    if inner:
        minutes = (f"CREATE VIEW Minutes AS SELECT supplier, window_time AS t, {aggregates}\nFROM TABLE({inner})\n"
                   "GROUP BY supplier, window_start, window_end, window_time;\n")
        aggregates = "SUM(bids) AS bids, SUM(total) AS total, MAX(top) AS top"
    return (f"{width}CREATE TABLE Bid ({SCHEMA.replace('TIMESTAMP', 'TIMESTAMP(3)')},\n"
            "  WATERMARK FOR bidtime AS bidtime - INTERVAL '5' SECOND)\n"
            f"WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',"
            " 'spark.maxFilesPerTrigger' = '1');\n"
            "CREATE TABLE Totals (window_start TIMESTAMP(3), window_end TIMESTAMP(3), supplier STRING,"
            f" bids BIGINT, total DECIMAL(38, 2), top {TOPS[top].sink_type})\n"
            f"WITH ('connector' = 'filesystem', 'path' = '{output}', 'format' = 'parquet');\n"
            f"{minutes}INSERT INTO Totals SELECT window_start, window_end, supplier, {aggregates}\nFROM TABLE({tvf})\n"
            "GROUP BY supplier, window_start, window_end;")


def add_child_arguments(parser: argparse.ArgumentParser) -> None:
    """The hidden arguments with which a benchmark starts itself as the process of one run."""
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)


def builtin_query(spark, case: Case, source: Path, output: Path, checkpoint: Path, wait: bool = True):
    """Spark's own aggregation of ``case`` over the bid files, one file per micro-batch, into
    parquet (run to the end of its input, or just started): the peer every benchmark compares with.
    Its checkpoint is written the way stategate's jobs write one on this disk (``hold_checkpoint_conf``),
    so the two differ by what they compute, not by how Hadoop renames their files."""
    from pyspark.sql import functions as F

    from stategate.spark_jobs.session import hold_checkpoint_conf

    hold_checkpoint_conf(spark, str(checkpoint), {})
    frame = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).csv(str(source))
             .withWatermark("bidtime", "5 seconds"))
    result = builtin_frame(case, frame).select(
        F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
        "supplier", "bids", "total", "top")
    query = (result.writeStream.outputMode("append").format("parquet").option("path", str(output))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    if wait:
        query.awaitTermination()
    return query


# ------------------------------------------------------------------ one run: a whole process
def child(engine: str, case: Case, source: Path, work: Path, slots: int | None) -> None:
    """Run one engine on one case in this process and print its figures as JSON."""

    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session(f"bench-{engine}")
    spark.sparkContext.setLogLevel("ERROR")
    output, checkpoint = work / "out", work / "ck"
    started = time.perf_counter()
    if engine == "builtin":
        query = builtin_query(spark, case, source, output, checkpoint)
    else:
        query = run(spark, job_sql(source, output, case.tvf, slots, case.top, case.inner), checkpoint).queries[0]
    seconds = time.perf_counter() - started
    progress = [p for p in query.recentProgress if p]
    phases: dict[str, int] = {}
    for p in progress:
        for phase, ms in p["durationMs"].items():
            phases[phase] = phases.get(phase, 0) + ms
    print(json.dumps({
        "query_seconds": seconds,
        "phases_ms": phases,
        "input_rows": sum(p["numInputRows"] for p in progress),
        "state_rows": max((sum(o["numRowsTotal"] for o in p["stateOperators"]) for p in progress), default=0),
    }))


@dataclass(frozen=True)
class Measured:
    seconds: float  # the whole process
    query_seconds: float  # from building the query to its end: the process without JVM start and data checks
    phases_ms: dict  # Spark's streaming progress, summed over the micro-batches: where the query's time went
    input_rows: int
    state_rows: int
    output: Path
    capped: bool = False
    error: str = ""  # the last line a failed run printed


@dataclass(frozen=True)
class ChildRun:
    """One whole process of a benchmark's ``--child``: its seconds and the figures it printed."""

    seconds: float
    figures: dict
    capped: bool = False
    error: str = ""  # the last line a failed run printed


def run_child(script: str, engine: str, case: Case, source: Path, work: Path, cap: float,
              slots: int | None = None, env: dict[str, str] | None = None) -> ChildRun:
    """Run ``script --child engine`` on one case in a fresh ``work`` directory, stopped past ``cap``
    seconds, with ``env`` added to its environment; the child prints its figures as one JSON line."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    command = [sys.executable, script, "--child", engine, "--case", case.name, "--source", str(source),
               "--work", str(work), *(["--slots", str(slots)] if slots else [])]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap, cwd=ROOT,
                              env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})})
    except subprocess.TimeoutExpired:
        return ChildRun(cap, {}, capped=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        errors = [line.strip() for line in done.stderr.splitlines() if "Exception" in line or "Error" in line]
        # The error itself (java.lang.OutOfMemoryError: ...) before a log line that mentions one.
        named = [line for line in errors if re.match(r"[\w.$]+(Exception|Error)\b", line)]
        return ChildRun(seconds, {}, error=(named or errors or [f"exit {done.returncode}"])[0][:200])
    return ChildRun(seconds, json.loads(done.stdout.strip().splitlines()[-1]))


def measure(engine: str, case: Case, source: Path, work: Path, cap: float, slots: int | None = None) -> Measured:
    run = run_child(__file__, engine, case, source, work, cap, slots)
    if run.capped or run.error:
        return Measured(run.seconds, 0, {}, 0, 0, work / "out", capped=run.capped, error=run.error)
    figures = run.figures
    return Measured(run.seconds, figures["query_seconds"], figures["phases_ms"], figures["input_rows"],
                    figures["state_rows"], work / "out")


def profile(measured: Measured) -> str:
    """Where a run's query time went, by Spark's streaming progress: ``addBatch`` is the micro-batches'
    Spark jobs (and, for stategate, its per-batch Python), the rest Spark's own bookkeeping; what
    is outside the triggers is building and starting the query."""
    phases = measured.phases_ms
    triggers = phases.get("triggerExecution", 0)
    parts = ", ".join(f"{name} {phases[name] / 1000:.1f}" for name in ("addBatch", "queryPlanning", "walCommit",
                                                                        "commitOffsets", "latestOffset")
                      if name in phases)
    return (f"query {measured.query_seconds:.1f} s = micro-batches {triggers / 1000:.1f} ({parts}) + start "
            f"{measured.query_seconds - triggers / 1000:.1f}")


def same_rows(left: Path, right: Path, columns: list[str] = COLUMNS) -> tuple[bool, int]:
    """Whether two outputs hold the same rows of ``columns`` (as a multiset), and how many. Each row is reduced to
    a 64-bit digest of its values, one column at a time, with times as microseconds and decimals as
    doubles: the production size's HOP output (21 million rows) as frames of text took the 23 GB
    of this machine and was killed."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def digests(path: Path) -> np.ndarray:
        table = pq.read_table(path, columns=columns)
        table = table.filter(pc.not_equal(table["supplier"], "closer"))
        digest = np.zeros(table.num_rows, dtype=np.uint64)
        for column in columns:
            values = table[column]
            if pa.types.is_timestamp(values.type):
                values = values.cast(pa.timestamp("us")).cast(pa.int64())
            elif pa.types.is_decimal(values.type):
                values = values.cast(pa.float64())
            hashed = pd.util.hash_array(values.to_numpy(zero_copy_only=False))
            digest = digest * np.uint64(1_000_003) ^ hashed  # wraps around, as a hash may
        return np.sort(digest)

    a, b = digests(left), digests(right)
    return bool(np.array_equal(a, b)), len(a)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=500)
    parser.add_argument("--wide-rows", type=int, default=200_000, help="bids for the day-long windows")
    parser.add_argument("--wide-keys", type=int, default=100)
    parser.add_argument("--minutes", type=int, default=180)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per case; the best counts")
    parser.add_argument("--cap", type=float, default=600, help="seconds before a run is stopped")
    parser.add_argument("--only", help="run only the cases whose name this regular expression finds "
                        "('TUMBLE 1 min$' is the MAX case alone)")
    parser.add_argument("--profile", action="store_true", help="also print where each best run's query time went")
    parser.add_argument("--slots", type=int, help="stategate's plain slots (SET '%s'): the number of "
                        "aggregates (3) leaves no headroom; default: the layout's, with headroom" % SLOTS_SETTING)
    add_child_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, next(c for c in CASES if c.name == args.case), args.source, args.work, args.slots)
        return 0

    work = Path(tempfile.mkdtemp(prefix="stategate-bench-"))
    try:
        main_data, wide_data = work / "bids", work / "bids-wide"
        generate(main_data, args.rows, args.keys, args.minutes, args.files)
        generate(wide_data, args.wide_rows, args.wide_keys, args.minutes, args.files)
        print(f"{args.rows:,} bids / {args.keys} suppliers (day-long windows: {args.wide_rows:,} / "
              f"{args.wide_keys}), {args.minutes} min of event time, {args.files} files (one per "
              f"micro-batch), local[2], whole processes, alternating, best of {args.repeat}\n")
        print(f"{'window':<27}{'built-in s':>11}{'stategate s':>12}{'built-in rows/s':>16}"
              f"{'stategate rows/s':>17}{'ratio':>8}{'peak state rows b/s':>22}  same rows")
        failures = 0
        for case in CASES:
            if args.only and not re.search(args.only, case.name):
                continue
            source = wide_data if case.wide else main_data
            builtins, ours = [], []
            for attempt in range(args.repeat):
                builtins.append(measure("builtin", case, source, work / f"b{attempt}", args.cap))
                ours.append(measure("stategate", case, source, work / f"s{attempt}", args.cap, args.slots))
                if builtins[-1].capped:
                    break  # a capped run is a lower bound already; do not spend the cap again
            builtin = min(builtins, key=lambda m: m.seconds)
            mine = min(ours, key=lambda m: (bool(m.error), m.seconds))
            if mine.error:
                failures += 1
                print(f"{case.name:<27}FAILED: {mine.error}", flush=True)
                continue
            if builtin.error:  # Spark's own could not run the case (HOP 60/1's approx_count_distinct: out of heap)
                print(f"{case.name:<27}{'failed':>11}{mine.seconds:>12.1f}   built-in: {builtin.error}", flush=True)
                continue
            rows = builtin.input_rows or mine.input_rows
            if builtin.capped or mine.capped:
                same, count = None, 0
            else:
                same, count = same_rows(builtin.output, mine.output,
                                        [c for c in COLUMNS if c != "top" or not TOPS[case.top].differs])
                failures += not same
            ratio = builtin.seconds / mine.seconds
            print(f"{case.name:<27}{('>' if builtin.capped else '') + f'{builtin.seconds:.1f}':>11}"
                  f"{('>' if mine.capped else '') + f'{mine.seconds:.1f}':>12}"
                  f"{rows / builtin.seconds:>16,.0f}{rows / mine.seconds:>17,.0f}"
                  f"{('>' if builtin.capped else '') + f'{ratio:.2f}':>8}"
                  f"{f'{builtin.state_rows:,}/{mine.state_rows:,}':>22}  "
                  f"{'n/a (capped)' if same is None else ('yes' if same else 'NO')} ({count:,} windows"
                  f"{', top not compared' if TOPS[case.top].differs else ''})", flush=True)
            if args.profile:
                for engine, measured in (("built-in", builtin), ("stategate", mine)):
                    if not measured.capped:
                        print(f"    {engine:<10} {profile(measured)}", flush=True)
        if failures:
            print(f"\nFAILED: {failures} case(s) failed or produced different rows", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

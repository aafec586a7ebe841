"""What a parallelism change costs at the restart: the same restart with and without repartitioning.

A job deploys on RocksDB state at 4 partitions and processes all but the last bid file and the
closing bid (not timed); then it restarts on those two, at 8 partitions (its state repartitioned
before the query starts, ``spark_jobs/rescale.py``) or at 4 again. Each restart runs in a process of its own, the two kinds
alternate, and the best of ``--repeat`` of each counts. Printed: the state rows carried, the
restart's seconds (from the job's start to its end, JVM start excluded) each way, and the
difference, which is what the repartition costs.

    .venv/bin/python benchmarks/rescale_bench.py [--rows 1000000 --keys 100000 --minutes 180 --files 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.restarts import TVF, feed, run_benchmark
from benchmarks.window_bench import job_sql

ROCKSDB = "SET 'state.backend.type' = 'rocksdb';\nSET 'parallelism.default' = '{}';\n"
BEFORE, AFTER = 4, 8


def child(engine: str, source: Path, work: Path) -> None:
    """Deploy at :data:`BEFORE` partitions on all files but the last, then restart on it at
    :data:`AFTER` (``repartition``) or :data:`BEFORE` (``same``), timing the restart."""
    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session("rescale-bench")
    bids, arrive = feed(source, work)
    checkpoint = work / "checkpoint"
    query = run(spark, ROCKSDB.format(BEFORE) + job_sql(bids, work / "out", TVF), checkpoint).queries[0]
    state_rows = sum(o.numRowsTotal for o in query.lastProgress.stateOperators) if query.lastProgress else 0
    arrive()
    partitions = AFTER if engine == "repartition" else BEFORE
    started = time.perf_counter()
    result = run(spark, ROCKSDB.format(partitions) + job_sql(bids, work / "out", TVF), checkpoint)
    seconds = time.perf_counter() - started
    assert len(result.repartitioned) == (1 if engine == "repartition" else 0), result.repartitioned
    print(json.dumps({"restart_seconds": seconds, "state_rows": state_rows}))


def report(args: argparse.Namespace, best: dict[str, float], figures: dict) -> None:
    print(f"{args.rows:,} bids over {args.keys:,} keys, TUMBLE 60 min, RocksDB; {figures['state_rows']:,} state rows "
          "at the restart")
    print(f"restart at {BEFORE} partitions (no change)   {best['same']:7.1f} s")
    print(f"restart at {AFTER} partitions (repartitioned) {best['repartition']:7.1f} s")
    print(f"the repartition                            {best['repartition'] - best['same']:+7.1f} s")


if __name__ == "__main__":
    sys.exit(run_benchmark(__file__, ("same", "repartition"), child, report))

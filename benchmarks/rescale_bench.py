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
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.window_bench import CASES, add_child_arguments, generate, job_sql, run_child

#: A window an hour long over the data's three hours: every key has an open window at the restart.
CASE = next(c for c in CASES if c.name == "TUMBLE 1 min")
TVF = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '60' MINUTES)"
ROCKSDB = "SET 'state.backend.type' = 'rocksdb';\nSET 'parallelism.default' = '{}';\n"
BEFORE, AFTER = 4, 8


def child(engine: str, source: Path, work: Path) -> None:
    """Deploy at :data:`BEFORE` partitions on all files but the last, then restart on it at
    :data:`AFTER` (``repartition``) or :data:`BEFORE` (``same``), timing the restart."""
    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session("rescale-bench")
    files = sorted(source.glob("*.csv"))
    feed = work / "feed"
    feed.mkdir()
    for path in files[:-2]:
        (feed / path.name).symlink_to(path)
    checkpoint = work / "checkpoint"
    query = run(spark, ROCKSDB.format(BEFORE) + job_sql(feed, work / "out", TVF), checkpoint).queries[0]
    state_rows = sum(o.numRowsTotal for o in query.lastProgress.stateOperators) if query.lastProgress else 0
    for path in files[-2:]:
        (feed / path.name).symlink_to(path)
    partitions = AFTER if engine == "repartition" else BEFORE
    started = time.perf_counter()
    result = run(spark, ROCKSDB.format(partitions) + job_sql(feed, work / "out", TVF), checkpoint)
    seconds = time.perf_counter() - started
    assert len(result.repartitioned) == (1 if engine == "repartition" else 0), result.repartitioned
    print(json.dumps({"restart_seconds": seconds, "state_rows": state_rows}))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--minutes", type=int, default=180)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each; the best counts")
    parser.add_argument("--cap", type=float, default=900, help="seconds before a run is stopped")
    add_child_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.source, args.work)
        return 0
    with tempfile.TemporaryDirectory(prefix="rescale-bench-") as folder:
        source = Path(folder) / "bids"
        generate(source, args.rows, args.keys, args.minutes, args.files)
        best: dict[str, float] = {}
        rows = 0
        for _ in range(args.repeat):
            for engine in ("same", "repartition"):
                done = run_child(__file__, engine, CASE, source, Path(folder) / engine, args.cap)
                if done.capped or done.error:
                    print(f"{engine}: {'stopped at the cap' if done.capped else done.error}", file=sys.stderr)
                    return 1
                best[engine] = min(best.get(engine, float("inf")), done.figures["restart_seconds"])
                rows = done.figures["state_rows"]
    print(f"{args.rows:,} bids over {args.keys:,} keys, TUMBLE 60 min, RocksDB; {rows:,} state rows at the restart")
    print(f"restart at {BEFORE} partitions (no change)   {best['same']:7.1f} s")
    print(f"restart at {AFTER} partitions (repartitioned) {best['repartition']:7.1f} s")
    print(f"the repartition                            {best['repartition'] - best['same']:+7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

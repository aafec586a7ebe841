"""What a re-seed costs at the restart, beside the restart it replaces and the take-over it avoids.

A TUMBLE job (COUNT, SUM and MAX per supplier and hour) deploys and processes all but the last two
bid files (not timed). Then its new version, which writes MIN where it wrote MAX, restarts on those
two files, one of three ways, each in a process of its own, alternating, the best of ``--repeat``:

* ``restart``: the old version again, unchanged (FULL): what any restart costs;
* ``re-seed``: the new version on the checkpoint. Its state layout has no room for MIN (the job
  has no headroom: ``analyzer/reseed.py``), so the restart carries every open window into a new
  layout (``spark_jobs/reseed.py``): PARTIAL, MIN starting from zero;
* ``take-over``: the new version after the state is cleared (archived), taking over with a bounded
  replay (``spark_jobs/takeover.py``): it re-reads the files its open windows need.

Printed: the state rows carried and the state's size on disk, and each way's seconds from the job's
start to its end (JVM start excluded).

    .venv/bin/python benchmarks/reseed_bench.py [--rows 1000000 --keys 100000 --minutes 180 --files 10]
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

ENGINES = ("restart", "re-seed", "take-over")


def child(engine: str, source: Path, work: Path) -> None:
    """Deploy on all files but the last two, then restart on them as ``engine`` says, timing it."""
    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session("reseed-bench")
    bids, arrive = feed(source, work)
    checkpoint = work / "checkpoint"
    old = job_sql(bids, work / "out", TVF)
    query = run(spark, old, checkpoint).queries[0]
    state_rows = sum(o.numRowsTotal for o in query.lastProgress.stateOperators) if query.lastProgress else 0
    state_bytes = sum(p.stat().st_size for p in (checkpoint / "Totals" / "state").rglob("*") if p.is_file())
    arrive()
    new = old.replace("MAX(price) AS top", "MIN(price) AS top")
    assert new != old
    options: dict = {}
    if engine == "take-over":
        archive = work / "archive"
        checkpoint.rename(archive)
        options = {"fresh": True, "take_over": str(archive)}
    started = time.perf_counter()
    result = run(spark, old if engine == "restart" else new, checkpoint, **options)
    seconds = time.perf_counter() - started
    rules = {f.rule for f in result.report.findings} if result.report is not None else set()
    assert ("stategate.layout.reseed" in rules) == (engine == "re-seed"), rules
    print(json.dumps({"restart_seconds": seconds, "state_rows": state_rows, "state_bytes": state_bytes}))


def report(args: argparse.Namespace, best: dict[str, float], figures: dict) -> None:
    print(f"{args.rows:,} bids over {args.keys:,} keys, TUMBLE 60 min, {args.files} files, the last two after the "
          f"restart; {figures['state_rows']:,} state rows ({figures['state_bytes'] / 1e6:.1f} MB on disk) at the restart")
    print(f"restart, unchanged (FULL)                    {best['restart']:7.1f} s")
    print(f"re-seed, MAX replaced by MIN (PARTIAL)       {best['re-seed']:7.1f} s")
    print(f"take-over after a clear (bounded replay)     {best['take-over']:7.1f} s")
    print(f"the re-seed against the restart              {best['re-seed'] - best['restart']:+7.1f} s")


if __name__ == "__main__":
    sys.exit(run_benchmark(__file__, ENGINES, child, report))

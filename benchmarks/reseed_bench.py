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
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.window_bench import CASES, add_child_arguments, generate, job_sql, run_child

#: A window an hour long over the data's three hours: every key has an open window at the restart.
CASE = next(c for c in CASES if c.name == "TUMBLE 1 min")
TVF = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '60' MINUTES)"
ENGINES = ("restart", "re-seed", "take-over")


def child(engine: str, source: Path, work: Path) -> None:
    """Deploy on all files but the last two, then restart on them as ``engine`` says, timing it."""
    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session("reseed-bench")
    files = sorted(source.glob("*.csv"))
    feed = work / "feed"
    feed.mkdir()
    for path in files[:-2]:
        (feed / path.name).symlink_to(path)
    checkpoint = work / "checkpoint"
    old = job_sql(feed, work / "out", TVF)
    query = run(spark, old, checkpoint).queries[0]
    state_rows = sum(o.numRowsTotal for o in query.lastProgress.stateOperators) if query.lastProgress else 0
    state_bytes = sum(p.stat().st_size for p in (checkpoint / "Totals" / "state").rglob("*") if p.is_file())
    for path in files[-2:]:
        (feed / path.name).symlink_to(path)
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
    with tempfile.TemporaryDirectory(prefix="reseed-bench-") as folder:
        source = Path(folder) / "bids"
        generate(source, args.rows, args.keys, args.minutes, args.files)
        best: dict[str, float] = {}
        figures: dict = {}
        for _ in range(args.repeat):
            for engine in ENGINES:
                done = run_child(__file__, engine, CASE, source, Path(folder) / engine, args.cap)
                if done.capped or done.error:
                    print(f"{engine}: {'stopped at the cap' if done.capped else done.error}", file=sys.stderr)
                    return 1
                best[engine] = min(best.get(engine, float("inf")), done.figures["restart_seconds"])
                figures = done.figures
    print(f"{args.rows:,} bids over {args.keys:,} keys, TUMBLE 60 min, {args.files} files, the last two after the "
          f"restart; {figures['state_rows']:,} state rows ({figures['state_bytes'] / 1e6:.1f} MB on disk) at the restart")
    print(f"restart, unchanged (FULL)                    {best['restart']:7.1f} s")
    print(f"re-seed, MAX replaced by MIN (PARTIAL)       {best['re-seed']:7.1f} s")
    print(f"take-over after a clear (bounded replay)     {best['take-over']:7.1f} s")
    print(f"the re-seed against the restart              {best['re-seed'] - best['restart']:+7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

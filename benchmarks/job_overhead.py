"""Per-job fixed cost: where a whole stategate job process spends its time, beside Spark's own.

A small job (5,000 bids in one file, TUMBLE 1 min) is run as a whole process, once by
``stategate.spark_jobs`` (``get_session`` and ``run``, as ``python -m stategate.spark_jobs run``
does) and once as Spark's own ``window()`` aggregation, alternating, best of ``--repeat`` by wall
time. Each process reports its phases: imports, the Spark session (JVM start included), building
and starting the query (for stategate: the analyzer, the checkpoint guard and compiling the plan),
and the micro-batches to the end of the input; the wall time is measured from outside.

    .venv/bin/python benchmarks/job_overhead.py [--repeat 3] [--rows 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.window_bench import CASES, ROOT, add_child_arguments, builtin_query, generate, job_sql

CASE = CASES[0]  # TUMBLE 1 min
PHASES = ("imports", "session", "start", "batches")


def child(engine: str, source: Path, work: Path) -> None:
    """One run in this process; prints its phases as JSON."""
    marks = [time.perf_counter()]
    from stategate.spark_jobs.session import get_session  # the same session settings for both

    if engine != "builtin":
        from stategate.spark_jobs.job import run

    marks.append(time.perf_counter())
    spark = get_session(f"overhead-{engine}")
    marks.append(time.perf_counter())
    if engine == "builtin":
        queries = [builtin_query(spark, CASE, source, work / "out", work / "ck", wait=False)]
    else:
        queries = run(spark, job_sql(source, work / "out", CASE.tvf), work / "ck", wait=False).queries
    marks.append(time.perf_counter())
    for query in queries:
        query.awaitTermination()
    marks.append(time.perf_counter())
    spark.stop()
    print(json.dumps(dict(zip(PHASES, (b - a for a, b in zip(marks, marks[1:]))))))


def measure(engine: str, source: Path, work: Path) -> dict[str, float]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", engine, "--source", str(source), "--work", str(work)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    phases = json.loads(done.stdout.strip().splitlines()[-1])
    phases["wall"] = time.perf_counter() - started
    return phases


def print_phases(builtin: dict[str, float], stategate: dict[str, float]) -> None:
    print(f"{'phase':<10}{'built-in s':>12}{'stategate s':>13}{'difference':>12}")
    for phase in (*PHASES, "wall"):
        print(f"{phase:<10}{builtin[phase]:>12.2f}{stategate[phase]:>13.2f}{stategate[phase] - builtin[phase]:>+12.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per engine; the best counts")
    parser.add_argument("--rows", type=int, default=5_000)
    add_child_arguments(parser)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if args.child:
        child(args.child, args.source, args.work)
        return 0
    work = Path(tempfile.mkdtemp(prefix="stategate-overhead-"))
    try:
        generate(work / "bids", args.rows, 50, 60, 1)
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.repeat):
            for engine in ("builtin", "stategate"):
                phases = measure(engine, work / "bids", work / engine)
                if engine not in best or phases["wall"] < best[engine]["wall"]:
                    best[engine] = phases
        print(f"{args.rows:,} bids in one file, {CASE.name}, local[2], whole processes, alternating, "
              f"best of {args.repeat} by wall time\n")
        print_phases(best["builtin"], best["stategate"])
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

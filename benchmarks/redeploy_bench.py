"""A clear-state redeploy on a long history: bounded take-over against a full replay, side by side.

48 hours of bids in files, one per 10 minutes (288 files), read one file per micro-batch as they
would arrive. v1 (TUMBLE 10 min per item) runs to completion; its checkpoint is archived; an hour of
new files arrives; v2 (an INCOMPATIBLE change of the same window shape: the group key is computed
differently) starts without state, either taking over from the archive (``--take-over``, bounded
replay) or reading the whole history again (a fresh start, which is what a clear-state did before).
Whole ``python -m stategate.spark_jobs run`` processes, alternating, best of ``--repeat``; each
prints the seconds until v2 has caught up (the process ran everything available) and the files and
rows it read, and what ``stategate check --deployed`` estimated before the deploy. Everything is
generated here; nothing is downloaded.

Target: bounded at least 10x faster than full on this history, rows read proportional to the span.

    .venv/bin/python benchmarks/redeploy_bench.py [--hours 48] [--rows 500] [--repeat 2]
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

KEYS = 100
DDL = """CREATE TABLE Bid (bidtime TIMESTAMP(3), price BIGINT, item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv', 'spark.maxFilesPerTrigger' = '1');
CREATE TABLE S (item STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total BIGINT, bids BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv');
"""
V1 = ("INSERT INTO S SELECT item, window_start, window_end, SUM(price), COUNT(*) FROM TABLE(TUMBLE(TABLE Bid, "
      "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end;")
V2 = V1.replace("SELECT item,", "SELECT UPPER(item),").replace("GROUP BY item,", "GROUP BY UPPER(item),")


def write_files(source: Path, first: int, count: int, rows: int) -> None:
    """Ten minutes of bids per file, ``rows`` per file over KEYS items; modification times in order."""
    source.mkdir(parents=True, exist_ok=True)
    for index in range(first, first + count):
        lines = []
        for n in range(rows):
            second = index * 600 + n * 600 // rows
            day, rest = divmod(second, 86_400)
            lines.append(f"2026-01-{1 + day:02d} {rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d},"
                         f"{n % 97},item{n % KEYS}")
        path = source / f"bids-{index:05d}.csv"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def run_job(work: Path, name: str, sql: str, *extra: str) -> tuple[float, float]:
    """One whole job process: its seconds, and the seconds its query spent catching up (from the
    job's record, written as its queries start, to the last commit: the process's start-up, JVM and
    session, left out)."""
    script = work / f"{name}.sql"
    script.write_text(sql)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(script),
                             "--checkpoint", str(work / f"{name}-checkpoint"), "--fresh", *extra],
                            capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    checkpoint = work / f"{name}-checkpoint"
    started_queries = (checkpoint / "_stategate" / "job.sql").stat().st_mtime
    last = max(path.stat().st_mtime for path in (checkpoint / "S" / "commits").iterdir() if path.name.isdigit())
    return elapsed, last - started_queries


def estimated(work: Path, checkpoint: Path, ddl: str) -> dict:
    """What ``stategate check v2.sql --deployed`` says a bounded take-over would re-read, with v1's
    checkpoint deployed in a job root (the gate reads it the same way)."""
    job = work / "root" / "bids"
    job.mkdir(parents=True)
    (job / "deployment.json").write_text(json.dumps({"sql": ddl + V1}))
    shutil.copytree(checkpoint, job / "checkpoint")
    (work / "v2.sql").write_text(ddl + V2)
    result = subprocess.run([str(Path(sys.executable).parent / "stategate"), "check", str(work / "v2.sql"),
                             "--deployed", f"file://{work / 'root'}", "--job", "bids", "--format", "json"],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "AIRFLOW_HOME": str(work / "airflow")})
    if result.returncode != 0:
        raise SystemExit(f"stategate check failed ({result.returncode}):\n{result.stderr[-3000:]}")
    (replay,) = json.loads(result.stdout)["replay"]
    return replay["volume"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=int, default=48, help="history before the redeploy (default 48)")
    parser.add_argument("--rows", type=int, default=500, help="bids per 10-minute file (default 500)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side, alternating (default 2)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    work = Path(tempfile.mkdtemp(prefix="stategate-redeploy-"))
    try:
        files = args.hours * 6
        source = work / "bids"
        write_files(source, 0, files, args.rows)
        sink = work / "out"  # every version writes the same sink: v2 continues v1's table
        v1, _ = run_job(work, "v1", DDL.format(source=source, sink=sink) + V1)
        write_files(source, files, 6, args.rows)  # an hour arrives before the redeploy
        estimate = estimated(work, work / "v1-checkpoint", DDL.format(source=source, sink=sink))
        archive = work / "archive"
        os.rename(work / "v1-checkpoint", archive)  # what the gate's clear-state does on a local root
        print(f"history: {files} files ({args.hours} h), {files * args.rows:,} bids; v1 ran in {v1:.1f} s; "
              f"then 6 new files")
        print(f"before the deploy, `stategate check --deployed`: re-reads {estimate['files']} of "
              f"{estimate['full_files']} files ({estimate['bytes']:,} of {estimate['full_bytes']:,} bytes)")

        best = {"bounded": (float("inf"), float("inf")), "full": (float("inf"), float("inf"))}
        for attempt in range(args.repeat):
            for side in ("bounded", "full"):  # alternating, so drift hits both sides alike
                name = f"v2-{side}-{attempt}"
                extra = ("--take-over", str(archive)) if side == "bounded" else ()
                sql = DDL.format(source=source, sink=sink) + V2
                best[side] = min(best[side], run_job(work, name, sql, *extra))  # the best whole process
        taken = json.loads((work / "v2-bounded-0-checkpoint" / "_stategate" / "take-over.json").read_text())
        (cutover,) = taken["pipelines"].values()  # the take-over applied (a moved sink would get none)
        bounded_files = cutover["replayed_files"] + 6
        full_files = files + 6
        print(f"\n{'v2 after a clear-state':<24}{'process s':>10}{'query s':>9}{'files read':>12}{'bids read':>11}")
        for side, label, read in (("bounded", "bounded (--take-over)", bounded_files),
                                  ("full", "full (fresh start)", full_files)):
            print(f"{label:<24}{best[side][0]:>10.1f}{best[side][1]:>9.1f}{read:>12}{read * args.rows:>11,}")
        ratio, query_ratio = (best["full"][i] / best["bounded"][i] for i in (0, 1))
        assert estimate["files"] == cutover["replayed_files"], "the estimate before deploy is what the take-over read"
        print(f"\nbounded is {ratio:.1f}x faster as a whole process (target 10x: {'met' if ratio >= 10 else 'MISSED'}), "
              f"{query_ratio:.1f}x in the query; it re-read {cutover['replayed_files']} of the "
              f"{cutover['archived_files']} archived files (the span: TUMBLE 10 min + 1 s watermark delay)")
        return 0 if ratio >= 10 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

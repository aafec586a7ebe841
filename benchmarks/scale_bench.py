"""Production scale: Spark's own window aggregation beside stategate's, both on RocksDB state.

Every other figure comes from a million bids over 500 keys in 10 files, where JVM start and
per-batch overhead dominate and every state fits in memory. Here the bids are spread over many keys
and read one file per micro-batch, and both engines run Spark's RocksDB state store with changelog
checkpointing (its jar ships with pyspark): Spark's built-in ``window()`` / ``session_window()``
written as a competent user would (``window_bench.builtin_frame``), and stategate's compiled job
with ``SET 'state.backend.type' = 'rocksdb'``. Whole processes, alternating, best of ``--repeat``.
Printed per window kind: seconds and the ratio (built-in / stategate: above 1 stategate is
faster), state rows, checkpoint bytes on disk at the end, the bytes each micro-batch wrote into
the checkpoint (first, median and last batch: what grows with the retained state shows here),
the peak resident memory of the JVM (driver and executors: ``local[2]`` runs both in one), and
whether both wrote the same rows. Everything is generated here; nothing is downloaded.

    .venv/bin/python benchmarks/scale_bench.py [--quick] [--repeat 1] [--only NAME[,NAME]] [--top AGG[,AGG]]
        [--profile]

Each job writes COUNT(*), SUM(price) and MAX(price) a window; ``--top`` runs each chosen case once
per aggregate it names in MAX's place (``window_bench.TOPS``: STDDEV_POP, FIRST_VALUE, LISTAGG...,
each beside Spark's own equivalent), so the aggregates Flink has beyond the five are measured
where state outgrows memory too.

``--profile`` runs both with Spark's event log on and prints, per case, each engine's time per
stage and per operator side by side (:mod:`benchmarks.event_log`): where one spends what the other
does not. The checkpoint's bytes are printed split into RocksDB's changelogs (written every batch)
and its snapshots, whose number follows the run's length in seconds.

The default size is the issue's production size (10M bids, 100k keys, 100 files); ``--quick``
(200k bids, 2k keys, 20 files) keeps a run to minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.event_log import profile, side_by_side, submit_args
from benchmarks.window_bench import (COLUMNS, TOPS, Case, add_child_arguments, builtin_query, generate, job_sql, run_child,
                                     same_rows)
from stategate.analyzer.settings import ROCKSDB, STATE_STORE

PRESETS = {"production": {"rows": 10_000_000, "keys": 100_000, "minutes": 1440, "files": 100},
           "quick": {"rows": 200_000, "keys": 2_000, "minutes": 600, "files": 20}}
CASES = [
    Case("TUMBLE 1 min", "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)", "tumble", 1),
    Case("SESSION 5 min gap", "SESSION(TABLE Bid PARTITION BY supplier, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)",
         "session", 5),
    Case("HOP 10 min / 1 min", "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '10' MINUTES)",
         "hop", 10, 1),
    Case("HOP 60 min / 1 min", "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)",
         "hop", 60, 1),
    Case("CUMULATE 60 min / 1 min",
         "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)", "cumulate", 60, 1),
]


def cases(tops: Sequence[str]) -> list[Case]:
    """Every case once per third aggregate in ``tops``, named after it but for MAX."""
    return [case if top == "MAX" else replace(case, name=f"{case.name} {top}", top=top) for top in tops for case in CASES]


CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
#: Both engines' state store: RocksDB with changelog checkpointing; stategate's job says it in SQL.
ROCKSDB_CONF = {STATE_STORE: ROCKSDB, CHANGELOG: "true"}
ROCKSDB_SQL = f"SET 'state.backend.type' = 'rocksdb';\nSET '{CHANGELOG}' = 'true';\n"


def written_since(root: Path, since: float, suffixes: tuple[str, ...] = ()) -> int:
    """Bytes of the files under ``root`` last written after ``since`` (of those ending in one of
    ``suffixes``, if given)."""
    return sum(p.stat().st_size for p in root.rglob("*")
               if p.is_file() and p.stat().st_mtime > since and (not suffixes or p.name.endswith(suffixes)))


#: RocksDB's files in a checkpoint: a changelog per batch and partition, and the snapshots (a zip
#: of metadata and the SST files it adds) that Spark's maintenance task uploads every
#: ``spark.sql.streaming.stateStore.maintenanceInterval`` (60 s): how many a run keeps follows
#: its length in seconds, not its batches.
CHANGELOGS, SNAPSHOTS = (".changelog",), (".zip", ".sst")


def child(engine: str, case: Case, source: Path, work: Path, slots: int | None = None) -> None:
    """Run one engine on one case in this process and print its figures as JSON."""
    from pyspark.sql.streaming import StreamingQueryListener

    from stategate.spark_jobs.job import run
    from stategate.spark_jobs.session import get_session

    spark = get_session(f"scale-{engine}")
    spark.sparkContext.setLogLevel("ERROR")
    output, checkpoint = work / "out", work / "ck"
    per_batch: list[int] = []

    class Writes(StreamingQueryListener):
        """After each micro-batch: the bytes it wrote into the checkpoint."""

        last = time.time()

        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            now = time.time()
            per_batch.append(written_since(checkpoint, self.last))
            self.last = now

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    spark.streams.addListener(Writes())
    started = time.perf_counter()
    if engine == "builtin":
        for key, value in ROCKSDB_CONF.items():
            spark.conf.set(key, value)
        query = builtin_query(spark, case, source, output, checkpoint)
    else:
        query = run(spark, ROCKSDB_SQL + job_sql(source, output, case.tvf, slots, case.top), checkpoint).queries[0]
    seconds = time.perf_counter() - started
    time.sleep(2)  # the listener hears of the last batch a moment after the query ends
    progress = [p for p in query.recentProgress if p]
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    status = Path(f"/proc/{jvm}/status").read_text()
    peak_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
    print(json.dumps({
        "query_seconds": seconds,
        "batches": len(progress),
        "state_rows": max((sum(o["numRowsTotal"] for o in p["stateOperators"]) for p in progress), default=0),
        "checkpoint_bytes": written_since(checkpoint, 0),
        "changelog_bytes": written_since(checkpoint, 0, CHANGELOGS),
        "snapshot_bytes": written_since(checkpoint, 0, SNAPSHOTS),
        "snapshots": sum(1 for p in checkpoint.rglob("*.zip")),
        "per_batch": per_batch,
        "jvm_peak_mb": peak_kb / 1024,
        "python_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def measure(engine: str, case: Case, source: Path, work: Path, cap: float, slots: int | None,
            profiled: bool) -> dict:
    env = None
    if profiled:  # beside the work directory, which the run starts by emptying; Spark needs it to exist
        shutil.rmtree(events_of(work), ignore_errors=True)
        events_of(work).mkdir(parents=True)
        env = {"PYSPARK_SUBMIT_ARGS": submit_args(events_of(work))}
    run = run_child(__file__, engine, case, source, work, cap, slots, env)
    if run.capped:
        return {"seconds": cap, "capped": True, "output": work / "out"}
    if run.error:
        return {"error": run.error}
    return {**run.figures, "seconds": run.seconds, "output": work / "out"}


def megabytes(measured: dict, figure: str) -> str:
    return f"{measured.get(figure, 0) / 2**20:,.1f} MB"


def events_of(work: Path) -> Path:
    """Where a profiled run's Spark event log goes."""
    return work.with_name(work.name + "-events")


def batches(measured: dict) -> str:
    """Bytes written into the checkpoint by the first, the median and the last micro-batch, in KB."""
    written = measured.get("per_batch") or [0]
    return f"{written[0] / 1024:,.0f}/{statistics.median(written) / 1024:,.0f}/{written[-1] / 1024:,.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k bids, 2k keys, 20 files")
    parser.add_argument("--repeat", type=int, default=1, help="alternating runs per case; the best counts")
    parser.add_argument("--cap", type=float, default=3600, help="seconds before a run is stopped")
    parser.add_argument("--only", help="run only the cases whose name contains this text (or one of these, "
                        "comma-separated): the data set is generated once for all of them")
    parser.add_argument("--top", default="MAX", help="the third aggregate of each job, instead of MAX(price) (or "
                        "several, comma-separated: each case runs once per aggregate): " + ", ".join(TOPS))
    parser.add_argument("--profile", action="store_true", help="run both engines with Spark's event log on and "
                        "print, per case, where each spent its time: per stage and per operator (event_log.py)")
    parser.add_argument("--slots", type=int, help="stategate's plain slots (SET 'stategate.state.slots'): the "
                        "number of aggregates (3) leaves no headroom; default: the layout's, with headroom")
    add_child_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.child, next(c for c in cases(list(TOPS)) if c.name == args.case), args.source, args.work, args.slots)
        return 0

    size = PRESETS["quick" if args.quick else "production"]
    work = Path(tempfile.mkdtemp(prefix="stategate-scale-"))
    try:
        generate(work / "bids", size["rows"], size["keys"], size["minutes"], size["files"])
        print(f"{size['rows']:,} bids / {size['keys']:,} keys, {size['minutes']} min of event time, {size['files']} "
              f"files (one per micro-batch), RocksDB state with changelog checkpointing, local[2], whole "
              f"processes, alternating, best of {args.repeat}\n")
        print(f"{'window':<25}{'built-in s':>11}{'stategate s':>12}{'ratio':>7}{'state rows b / s':>20}"
              f"{'checkpoint MB b / s':>21}{'KB a batch b (1st/med/last)':>29}{'s (1st/med/last)':>19}"
              f"{'JVM peak MB b / s':>19}  same rows")
        failures = 0
        for case in cases(args.top.split(",")):
            if args.only and not any(part in case.name for part in args.only.split(",")):
                continue
            runs: dict[str, list[dict]] = {"builtin": [], "stategate": []}
            for attempt in range(args.repeat):
                for engine in runs:
                    runs[engine].append(measure(engine, case, work / "bids", work / f"{engine}{attempt}", args.cap,
                                                  args.slots, args.profile))
            builtin, mine = (min(r, key=lambda m: ("error" in m, m.get("seconds", 0))) for r in runs.values())
            if "error" in builtin or "error" in mine:
                failures += 1
                print(f"{case.name:<25}FAILED: {builtin.get('error') or mine.get('error')}", flush=True)
                continue
            capped = builtin.get("capped") or mine.get("capped")
            # Spark's own first and collect_list take rows in any order: their windows, counts and sums are compared.
            compared = [c for c in COLUMNS if c != "top" or not TOPS[case.top].differs]
            same = None if capped else same_rows(builtin["output"], mine["output"], compared)[0]
            failures += same is False
            state = f"{builtin.get('state_rows', 0):,} / {mine.get('state_rows', 0):,}"
            disk = f"{builtin.get('checkpoint_bytes', 0) / 2**20:,.1f} / {mine.get('checkpoint_bytes', 0) / 2**20:,.1f}"
            memory = f"{builtin.get('jvm_peak_mb', 0):,.0f} / {mine.get('jvm_peak_mb', 0):,.0f}"
            verdict = "n/a (capped)" if same is None else "yes" if same else "NO"
            print(f"{case.name:<25}{builtin['seconds']:>11.1f}{mine['seconds']:>12.1f}"
                  f"{builtin['seconds'] / mine['seconds']:>7.2f}{state:>20}{disk:>21}{batches(builtin):>29}"
                  f"{batches(mine):>19}{memory:>19}  {verdict}", flush=True)
            print(f"{'':<25}checkpoint: changelogs {megabytes(builtin, 'changelog_bytes')}, snapshots "
                  f"{megabytes(builtin, 'snapshot_bytes')} ({builtin.get('snapshots', 0)} uploaded) / changelogs "
                  f"{megabytes(mine, 'changelog_bytes')}, snapshots {megabytes(mine, 'snapshot_bytes')} "
                  f"({mine.get('snapshots', 0)} uploaded)", flush=True)
            if args.profile:
                print(side_by_side(profile(events_of(builtin["output"].parent)),
                                   profile(events_of(mine["output"].parent)), ("built-in", "stategate")) + "\n",
                      flush=True)
        return 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

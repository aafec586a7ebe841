"""Crash soak: kill -9 a running stategate job over and over, restart it from its checkpoint each time,
and compare its sinks with an uninterrupted run of the same job on the same files.

Kills land at random moments (after at least one more committed batch, so every restart makes
progress) and, one time in three, at a failpoint inside the file sink: between staging a batch's
file and moving it into place, or after moving it but before Spark commits the batch. Prints the
kills survived by kind, the batches committed, and the rows compared, duplicated, missing or extra;
exits 1 on any difference.

    .venv/bin/python benchmarks/crash_soak.py [--kills 20] [--files 60] [--rows-per-file 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.spark_jobs.crashes import (
    SINKS, CrashingJob, duplicates, missing_and_extra, sink_rows, write_bids)


def soak(root: Path, kills: int, files: int, rows_per_file: int, seed: int) -> int:
    rng = random.Random(seed)
    started = time.perf_counter()
    reference = CrashingJob(root / "uninterrupted")
    rows_in = write_bids(reference.root / "incoming", files, rows_per_file, seed)
    reference.finish()
    expected = sink_rows(reference.root)
    uninterrupted = time.perf_counter() - started
    print(f"uninterrupted run: {rows_in} bids in {files + 1} files, {reference.committed()} batches, "
          f"{uninterrupted:.0f} s")

    job = CrashingJob(root / "crashed")
    write_bids(job.root / "incoming", files, rows_per_file, seed)
    survived: Counter = Counter()
    started = time.perf_counter()
    while sum(survived.values()) < kills:
        if rng.random() < 1 / 3:
            point = f"{rng.choice(('sink.staged', 'sink.placed'))}:{rng.randint(1, 3)}"
            if job.kill_at(point) is None:
                break
            survived[point.split(":")[0]] += 1
        elif job.kill_randomly(rng):
            survived["random moment"] += 1
        else:
            break
        print(f"  kill {sum(survived.values()):>3}: {job.log[-1]}", flush=True)
    job.finish()
    elapsed = time.perf_counter() - started

    actual = sink_rows(job.root)
    missing, extra = missing_and_extra(expected, actual)
    compared = sum(sum(expected[sink].values()) for sink in SINKS)
    print(f"\nkills survived: {sum(survived.values())} ("
          + ", ".join(f"{kind} {count}" for kind, count in survived.most_common()) + ")")
    print(f"crashed run: {job.committed()} batches committed, {elapsed:.0f} s including restarts")
    print(f"rows compared: {compared} ({', '.join(f'{s} {sum(expected[s].values())}' for s in SINKS)})")
    print(f"duplicated: {duplicates(actual)}  missing: {missing}  extra: {extra}  "
          f"staged files left: {len(list(job.root.glob('out/*/_staging/*')))}")
    ok = actual == expected and sum(survived.values()) >= kills
    print("RESULT: " + ("identical to the uninterrupted run" if ok else "DIFFERENT (or fewer kills than asked)"))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--files", type=int, default=60, help="input files; each is one micro-batch")
    parser.add_argument("--rows-per-file", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (job logs)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="stategate-soak-"))
    try:
        return soak(root, args.kills, args.files, args.rows_per_file, args.seed)
    finally:
        if args.keep:
            print(f"work directory: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

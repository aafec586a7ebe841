"""Bytes a HOP or CUMULATE batch writes for its retained slices: a delta against all it retains.

Stage 2 of HOP and CUMULATE keeps the slices later windows still need beside the checkpoint
(``spark_jobs/assembly.py``, ``SliceLog``). A batch writes the slices it adds (a delta); the batch
that would read ten entries writes all it retains (a base), which is what every batch wrote before
the log kept deltas. One whole ``python -m stategate.spark_jobs run`` process per case, on bids
generated here (one file per micro-batch); afterwards the log holds the last base and the deltas
since, and both are measured side by side: the bytes and rows a batch writes now (the deltas:
first, median, last) against what it wrote before (the base).

    .venv/bin/python benchmarks/slice_log_bench.py [--rows 1000000 --keys 5000 --minutes 600 --files 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.window_bench import generate, job_sql
from stategate.spark_jobs.assembly import SLICES_DIR

CASES = {
    "HOP 60 min / 1 min": "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)",
    "CUMULATE 60 min / 1 min": "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE, INTERVAL '60' MINUTES)",
}


def size(entry: Path) -> int:
    return sum(part.stat().st_size for part in entry.glob("part-*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--minutes", type=int, default=600)
    parser.add_argument("--files", type=int, default=100, help="micro-batches (at least 12: a base is written at 10)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="stategate-slices-"))
    try:
        generate(work / "bids", args.rows, args.keys, args.minutes, args.files)
        print(f"{args.rows:,} bids, {args.keys:,} keys, {args.minutes} minutes, {args.files} micro-batches\n")
        print(f"{'window':<26}{'delta bytes first / median / last':>36}{'base bytes':>13}{'base / median':>15}")
        for name, tvf in CASES.items():
            case = work / name.split()[0].lower()
            script = case / "job.sql"
            case.mkdir()
            script.write_text(job_sql(work / "bids", case / "out", tvf))
            subprocess.run([sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(script),
                            "--checkpoint", str(case / "checkpoint")], check=True, capture_output=True, timeout=3600)
            log = case / "checkpoint" / "Totals" / SLICES_DIR
            deltas = [size(e) for e in sorted(log.glob("*.delta"), key=lambda e: int(e.name.split(".")[0]))]
            (base,) = [size(e) for e in log.iterdir() if e.name.isdigit()]
            median = statistics.median(deltas)
            print(f"{name:<26}{f'{deltas[0]:,} / {median:,.0f} / {deltas[-1]:,}':>36}{base:>13,}{base / median:>15.1f}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""kill -9 for a running job: the harness of ``test_crash.py`` and ``benchmarks/crash_soak.py``.

A job (three pipelines: TUMBLE, HOP, and an interval join of bids with their window's highest price,
each into a CSV file sink) runs as its own process group, the way spark-submit runs it: Python
driver and JVM together. It is killed with SIGKILL, at random moments or held at a failpoint (``spark_jobs.failpoints``) in the middle of a sink write, and started
again on the same checkpoint until it finishes. The sinks must then hold exactly the rows of an
uninterrupted run: no duplicate, nothing missing.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable
from datetime import datetime, timedelta
from pathlib import Path

from tests.spark_jobs.helpers import bid_ddl

REPO = Path(__file__).resolve().parents[2]
SINKS = ("Totals", "Hopping", "Highest")
START = datetime(2026, 1, 1, 10)

def job_script(root: Path) -> str:
    """Three pipelines over one bid stream, one input file per micro-batch."""
    return bid_ddl(root / "incoming", delay="INTERVAL '5' SECOND",
                   options=", 'spark.maxFilesPerTrigger' = '1'") + f"""
CREATE TABLE Totals (window_start TIMESTAMP(3), window_end TIMESTAMP(3), item STRING,
  bids BIGINT, total DECIMAL(38, 2), top DECIMAL(10, 2)
) WITH ('connector' = 'filesystem', 'path' = '{root}/out/Totals', 'format' = 'csv');

CREATE TABLE Highest (bidtime TIMESTAMP(3), item STRING, price DECIMAL(10, 2)
) WITH ('connector' = 'filesystem', 'path' = '{root}/out/Highest', 'format' = 'csv');

CREATE TABLE Hopping (window_start TIMESTAMP(3), window_end TIMESTAMP(3), supplier_id STRING,
  bids BIGINT, total DECIMAL(38, 2)
) WITH ('connector' = 'filesystem', 'path' = '{root}/out/Hopping', 'format' = 'csv');

INSERT INTO Totals
SELECT window_start, window_end, item, COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS top
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES))
GROUP BY item, window_start, window_end;

INSERT INTO Hopping
SELECT window_start, window_end, supplier_id, COUNT(*) AS bids, SUM(price) AS total
FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES, INTERVAL '3' MINUTES))
GROUP BY supplier_id, window_start, window_end;

INSERT INTO Highest
SELECT B.bidtime, B.item, B.price
FROM Bid B
JOIN (
  SELECT item, MAX(price) AS top, window_end
  FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES))
  GROUP BY item, window_start, window_end
) M ON B.item = M.item AND B.price = M.top
WHERE B.bidtime BETWEEN M.window_end - INTERVAL '1' MINUTE AND M.window_end;
"""


def write_bids(folder: Path, files: int, rows_per_file: int, seed: int = 0) -> int:
    """Bid files in event-time order, one minute of bids each. Times only rise from file to file, so
    no bid is ever late and the output does not depend on where micro-batches are cut."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        first = START + timedelta(minutes=number)
        lines = [f"{first + timedelta(seconds=rng.uniform(0, 59.9)):%Y-%m-%d %H:%M:%S.%f}"[:-3]
                 + f",{rng.randint(100, 9999) / 100:.2f},item{rng.randint(0, 7)},supplier{rng.randint(0, 3)}"
                 for _ in range(rows_per_file)]
        path = folder / f"bids-{number:05d}.csv"
        path.write_text("\n".join(lines) + "\n")
        stamp = time.time() - files + number  # Spark's file source orders by modification time
        os.utime(path, (stamp, stamp))
    # A last bid far ahead: its watermark closes every window above.
    closer = folder / f"bids-{files:05d}.csv"
    closer.write_text(f"{START + timedelta(days=1):%Y-%m-%d %H:%M:%S}.000,0.01,closer,closer\n")
    return files * rows_per_file + 1


def sink_rows(root: Path) -> dict[str, Counter]:
    """Every row in the sinks' visible files, counted (a row written twice counts 2)."""
    rows = {}
    for sink in SINKS:
        counter: Counter = Counter()
        for part in sorted((root / "out" / sink).glob("part-*.csv")):
            with part.open(newline="") as handle:
                counter.update(tuple(row) for row in csv.reader(handle))
        rows[sink] = counter
    return rows


def duplicates(rows: dict[str, Counter]) -> int:
    return sum(n - 1 for counter in rows.values() for n in counter.values() if n > 1)


def missing_and_extra(expected: dict[str, Counter], actual: dict[str, Counter]) -> tuple[int, int]:
    missing = sum(sum((expected[s] - actual[s]).values()) for s in SINKS)
    extra = sum(sum((actual[s] - expected[s]).values()) for s in SINKS)
    return missing, extra


@dataclass
class CrashingJob:
    """One job root (input, checkpoint, sinks), started and killed as a process group. ``sql`` replaces
    the three-pipeline script; ``arguments`` are added to every start (a retried task's command)."""

    root: Path
    log: list[str] = field(default_factory=list)
    sql: str = ""
    arguments: tuple[str, ...] = ()

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def script(self) -> Path:
        path = self.root / "job.sql"
        if not path.exists():
            path.write_text(self.sql or job_script(self.root))
        return path

    def committed(self) -> int:
        """Micro-batches Spark has committed, over both pipelines."""
        return sum(len(list((self.checkpoint / sink / "commits").glob("[0-9]*"))) for sink in SINKS)

    def start(self, pause_at: str | None = None) -> subprocess.Popen:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        env.pop("STATEGATE_PAUSE_AT", None)
        if pause_at:
            env.update(STATEGATE_PAUSE_AT=pause_at, STATEGATE_PAUSE_FILE=str(self.pause_file))
            self.pause_file.unlink(missing_ok=True)
        command = [sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(self.script),
                   "--checkpoint", str(self.checkpoint), "--master", "local[2]", *self.arguments]
        with (self.root / "job.log").open("ab") as output:
            return subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    @property
    def pause_file(self) -> Path:
        return self.root / "paused"

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL to the whole group: the Python driver and its JVM die at the same instant."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def kill_at(self, point: str, timeout: float = 240, before_kill: Callable[[], None] | None = None) -> str | None:
        """Start, wait until the job is held at ``point`` (``sink.staged:2``), kill it there (after
        ``before_kill``, while it is held). Returns the staged batch files at that moment; None if the
        job finished without reaching ``point``."""
        process = self.start(pause_at=point)
        deadline = time.monotonic() + timeout
        while not self.pause_file.exists():
            if process.poll() == 0:
                return None
            if process.poll() is not None:
                raise AssertionError(f"the job failed ({process.returncode}); see {self.root / 'job.log'}")
            if time.monotonic() > deadline:
                self.kill(process)
                raise AssertionError(f"the job did not reach {point} in {timeout} s")
            time.sleep(0.05)
        staged = sorted(p.name for p in self.root.glob("out/*/_staging/*"))
        if before_kill is not None:
            before_kill()
        self.kill(process)
        self.log.append(f"killed at {point} (in the sinks' staging areas: {', '.join(staged) or '-'})")
        return ", ".join(staged)

    def kill_randomly(self, rng: random.Random, within: float = 1.5, timeout: float = 240) -> bool:
        """Start, wait for one more committed batch (so every restart makes progress), then kill after
        a random delay of up to ``within`` seconds. False if the job finished before the kill."""
        before = self.committed()
        process = self.start()
        deadline = time.monotonic() + timeout
        while self.committed() <= before:
            if process.poll() is not None:
                return False
            if time.monotonic() > deadline:
                self.kill(process)
                raise AssertionError(f"no batch committed in {timeout} s; see {self.root / 'job.log'}")
            time.sleep(0.05)
        time.sleep(rng.uniform(0, within))
        if process.poll() is not None:
            return False
        self.kill(process)
        self.log.append(f"killed at random after batch {self.committed()}")
        return True

    def finish(self, timeout: float = 600) -> None:
        """Run to the end (available-now): the job must exit 0."""
        process = self.start()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(process)
            raise
        if code != 0:
            raise AssertionError(f"the job exited {code}; see {self.root / 'job.log'}")

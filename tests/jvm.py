"""The JVMs a test session starts, and what makes them cheap to start without changing what they compute.

Every JVM a test starts in a process of its own (a job run as a module, spark-submit from Airflow,
the standalone cluster and the executors it launches) lives for seconds to a few minutes, and on
two cores the suite is bound by CPU. Three JVM options, passed to each through ``JAVA_TOOL_OPTIONS``:

* no optimising JIT tier: such a JVM exits before that tier pays for its compiles (test_always_on:
  632 against 356 CPU-seconds, 357 against 248 s). The session's own JVM, which runs every
  in-process test, keeps it (:func:`long_lived_jvm`).
* the serial garbage collector, for a short-lived JVM's small heap (measured, not profiled:
  test_lifecycle and test_crash 161 s with G1, 147 s with it, one run each). The session's JVM
  keeps G1, where it made no difference (test_flink_equality: 173 against 172 s). With this and
  the packaging tests' environment built in the background (:mod:`tests.wheel`), the whole suite
  took 1,493 s against 1,654 s the same day (test_always_on 162 against 123 s).
* the classes a stategate job loads, mapped from one class-data-sharing archive (the JDK's dynamic
  archive, written when one small job the session runs first exits) instead of read, verified and
  parsed from Spark's jars again by every JVM: a small job run as a module took 12.8-13.7 s
  without it and 7.5-9.7 s with it (three runs each, alternating); the whole suite 1,837 s
  without it and 1,469 s with it (test_always_on 229 against 157 s). A JVM that cannot
  map it (another JDK, another class path) loads its classes as before; the archive's warnings
  are off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

OPTIONS = "JAVA_TOOL_OPTIONS"
SHORT_LIVED = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The archive's own log lines (a JVM that cannot map it says so on stderr, which tests read).
QUIET_ARCHIVE = "-Xlog:cds=off,cds+dynamic=off"


def with_option(option: str) -> str:
    """The JVM options every JVM started now gets, and ``option``."""
    return f"{os.environ.get(OPTIONS, '')} {option}".strip()


def add_option(option: str) -> None:
    """Pass ``option`` to every JVM started from now on."""
    os.environ[OPTIONS] = with_option(option)


@contextmanager
def long_lived_jvm() -> Iterator[None]:
    """The JVM started inside this block keeps the optimising tier (the session's went 18% slower
    without it, test_flink_equality: 208 against 176 s) and the default collector."""
    inherited = os.environ[OPTIONS]
    if own := inherited.replace(SHORT_LIVED, "").strip():
        os.environ[OPTIONS] = own
    else:
        del os.environ[OPTIONS]
    try:
        yield
    finally:
        os.environ[OPTIONS] = inherited


class JobClasses:
    """The archive of the classes a stategate job loads (streaming, the state store, CSV and parquet,
    code generation), written in the background: one small TUMBLE job, run as its own process,
    writes it when it exits, while the tests that start no JVM run on the other core."""

    def __init__(self) -> None:
        from tests.spark_jobs.helpers import bid_ddl, seed_bids

        self.work = work = Path(tempfile.mkdtemp(prefix="stategate-jvm-classes-"))
        self.archive, script = work / "classes.jsa", work / "job.sql"
        script.write_text(
            bid_ddl(seed_bids(work))
            + "CREATE TABLE Totals (window_start TIMESTAMP(3), window_end TIMESTAMP(3), supplier_id STRING, "
              f"bids BIGINT, total DECIMAL(38, 2)) WITH ('connector' = 'filesystem', 'path' = '{work / 'totals'}', "
              "'format' = 'parquet');\n"
              "INSERT INTO Totals SELECT window_start, window_end, supplier_id, COUNT(*), SUM(price)\n"
              "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
              "GROUP BY supplier_id, window_start, window_end;\n")
        options = with_option(f"-XX:ArchiveClassesAtExit={self.archive} {QUIET_ARCHIVE}")
        self._sharing = threading.Lock()  # the cluster's starter (tests.conftest) waits for it too
        self._writer: subprocess.Popen | None = subprocess.Popen(
            [sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(script),
             "--checkpoint", str(work / "checkpoint")], env={**os.environ, OPTIONS: options},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def share(self) -> None:
        """Wait for the archive (the first call only): every JVM started after maps it. If it could
        not be written, nothing changes. A second caller waits for the first."""
        with self._sharing:
            if self._writer is not None:
                self._wait(self._writer)
                self._writer = None

    def _wait(self, writer: subprocess.Popen) -> None:
        try:
            # Until its output ends, not only the job: the job's JVM holds the pipe while it
            # writes the archive, after the Python process has exited.
            writer.communicate(timeout=600)
            written = writer.returncode == 0 and self.archive.is_file()
        except subprocess.TimeoutExpired:
            writer.kill()
            written = False
        if written:
            add_option(f"-XX:SharedArchiveFile={self.archive} {QUIET_ARCHIVE}")

    def stop(self) -> None:
        """At the session's end: end the writing job if no test needed the archive, and remove it."""
        with self._sharing:
            if self._writer is not None:
                self._writer.kill()
                self._writer.wait()
        shutil.rmtree(self.work, ignore_errors=True)

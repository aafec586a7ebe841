"""An always-on job stopped gracefully through its checkpoint, wherever its driver runs.

The job (three pipelines into CSV sinks, one input file per micro-batch: ``tests.spark_jobs.crashes``)
runs as its own process under a processing-time trigger; ``python -m stategate.spark_jobs stop``
asks it to stop by a file beside its state. It finishes the micro-batch it is in, stops and exits
0; a start on the same checkpoint continues it, and the sinks then hold exactly the rows of an
uninterrupted run. (A stop that times out, and the kill after it: ``test_crash.py``.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from stategate.spark_jobs.checkpoint import AppState, Checkpoint, WritableCheckpoint
from stategate.spark_jobs.job import run
from stategate.spark_jobs.lifecycle import stop as ask_stop
from stategate.spark_jobs.storage import LocalFiles
from tests.spark_jobs.crashes import REPO, SINKS, CrashingJob, sink_rows, write_bids
from tests.spark_jobs.helpers import bid_ddl

FILES, ROWS_PER_FILE = 6, 40
ALWAYS_ON = ("--trigger", "processing-time=500 milliseconds", "--heartbeat", "1")


def stop(checkpoint: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stategate.spark_jobs", "stop", "--checkpoint", str(checkpoint),
                           "--timeout", str(timeout)], cwd=REPO, capture_output=True, text=True, timeout=timeout + 60)


def wait_for(condition, timeout: float, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process is None or process.poll() is None, f"the job ended ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.1)


def test_a_stop_lets_the_batch_in_progress_commit_and_a_restart_continues_exactly(spark, uninterrupted, tmp_path) -> None:
    expected = uninterrupted(FILES, ROWS_PER_FILE)
    job = CrashingJob(tmp_path / "job", arguments=ALWAYS_ON)
    write_bids(job.root / "incoming", FILES, ROWS_PER_FILE)
    checkpoint = Checkpoint(LocalFiles(), str(job.checkpoint))
    process = job.start()
    try:
        wait_for(lambda: job.committed() >= 3 * len(SINKS), 240, "three batches committed", process)
        running = checkpoint.application()
        assert running is not None and running.state is AppState.RUNNING and running.alive()
        stopped = stop(job.checkpoint)
        assert stopped.returncode == 0, stopped.stderr
        assert f"application {running.id} on {job.checkpoint} is down (stopped: stopped on request" in stopped.stdout
        assert process.wait(timeout=60) == 0, "the job exits 0 when stopped"
    finally:
        if process.poll() is None:
            job.kill(process)
    ended = checkpoint.application()
    assert ended is not None and ended.state is AppState.STOPPED and not ended.alive()
    assert checkpoint.stop_requested() is None, "the job withdrew the request it acted on"
    assert not list(job.root.glob("out/*/_staging/*")), "no batch was left half-written"
    for sink in SINKS:
        query = checkpoint.query(sink)
        assert query.planned()[-1] - query.committed()[-1] <= 1, "at most one batch planned that never wrote"
    assert job.committed() < FILES * len(SINKS), "stopped before the end of its input"

    run(spark, job.script.read_text(), job.checkpoint)  # the next start continues, to the end of the input
    assert sink_rows(job.root) == expected


def test_stopping_a_job_that_does_not_run_says_so(tmp_path) -> None:
    stopped = stop(tmp_path / "checkpoint", timeout=5)
    assert stopped.returncode == 0
    assert stopped.stdout.startswith(f"stategate: not running on {tmp_path / 'checkpoint'}: no application has run")


def test_a_stop_right_after_the_last_input_writes_every_window_that_input_closed(tmp_path) -> None:
    """Stopped between the micro-batch of its last input and the batch of no input that evicts with
    the watermark it committed: the job runs that batch before it stops (it comes with the query's
    next trigger), so this version writes the windows its input closed, not the next one to start."""
    root = tmp_path / "job"
    job = CrashingJob(root, sql=bid_ddl(root / "incoming", delay="INTERVAL '5' SECOND",
                                        options=", 'spark.maxFilesPerTrigger' = '1'") + f"""
CREATE TABLE Totals (window_start TIMESTAMP(3), window_end TIMESTAMP(3), item STRING, bids BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{root}/out/Totals', 'format' = 'csv');
INSERT INTO Totals SELECT window_start, window_end, item, COUNT(*) AS bids
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES)) GROUP BY item, window_start, window_end;
""", arguments=("--trigger", "processing-time=5 seconds", "--heartbeat", "1"))
    files = 3
    write_bids(root / "incoming", files, ROWS_PER_FILE)
    expected = Counter((f"{line[:16]}:00.000", line.split(",")[2]) for path in sorted((root / "incoming").iterdir())[:files]
                       for line in path.read_text().splitlines())  # every window but the far bid's
    query = Checkpoint(LocalFiles(), str(job.checkpoint)).query("Totals")
    process = job.start()
    try:  # the far bid's batch (one file a batch) committed: a trigger later, Spark would evict
        wait_for(lambda: len(query.committed()) > files, 240, "the last input's batch committed", process)
        assert query.due_eviction() is not None, "stopped before the batch that evicts"
        stopped = ask_stop(WritableCheckpoint(LocalFiles(), str(job.checkpoint)), 60, "test")
        assert stopped.down, stopped.message
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            job.kill(process)
    assert query.due_eviction() is None and query.planned() == query.committed() == list(range(files + 2))
    written = Counter()
    for part in (root / "out" / "Totals").glob("part-*.csv"):
        for start, _, item, bids in (line.split(",") for line in part.read_text().splitlines()):
            written[start, item] += int(bids)
    assert written == expected

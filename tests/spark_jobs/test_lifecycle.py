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
from pathlib import Path

from stategate.spark_jobs.checkpoint import AppState, Checkpoint
from stategate.spark_jobs.job import run
from stategate.spark_jobs.storage import LocalFiles
from tests.spark_jobs.crashes import REPO, SINKS, CrashingJob, sink_rows, write_bids

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

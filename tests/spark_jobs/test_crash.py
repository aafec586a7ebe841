"""kill -9 at random moments and in the middle of sink writes (once after a graceful stop that timed
out, the job held inside a micro-batch; last, right after a micro-batch committed, before Spark
planned the next): the output stays exactly-once, and a restart with no new input writes every window.

Scaled for CI (the two kills at sink writes and one at random, 6 input files);
``benchmarks/crash_soak.py`` (``make reliability``) runs the same for long.
"""

from __future__ import annotations

import random
import subprocess
import sys

from stategate.spark_jobs.checkpoint import Checkpoint
from stategate.spark_jobs.job import run
from stategate.spark_jobs.storage import LocalFiles
from tests.spark_jobs.crashes import (
    REPO, SINKS, CrashingJob, duplicates, missing_and_extra, sink_rows, write_bids)

FILES, ROWS_PER_FILE = 6, 40
#: Spark's switch for micro-batches that read no input (they evict what the watermark passed).
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def stop_times_out(job: CrashingJob) -> None:
    """``stop`` asked of a job held inside a micro-batch: it says it timed out, and that a kill is safe."""
    asked = subprocess.run([sys.executable, "-m", "stategate.spark_jobs", "stop", "--checkpoint", str(job.checkpoint),
                            "--timeout", "3"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert asked.returncode == 4, asked.stdout + asked.stderr
    assert "is still stopping after 3 s" in asked.stderr and "Killing it is safe" in asked.stderr


def test_killed_jobs_restart_to_exactly_the_rows_of_an_uninterrupted_run(spark, uninterrupted, tmp_path) -> None:
    expected = uninterrupted(FILES, ROWS_PER_FILE)

    job = CrashingJob(tmp_path / "crashed")
    write_bids(job.root / "incoming", FILES, ROWS_PER_FILE)
    # Held between writing a batch's file to staging and moving it into place, then killed, after
    # a graceful stop, asked meanwhile, timed out: the job cannot finish the micro-batch it is in.
    assert job.kill_at("sink.staged:3", before_kill=lambda: stop_times_out(job)), \
        "a batch file was staged but not in place when the job died"
    # Killed with the file in place but before Spark committed the batch: the replay must replace it.
    job.kill_at("sink.placed:2")
    rng = random.Random(6)
    assert job.kill_randomly(rng), f"the job finished before the random kill: {job.log}"
    # To the end of the input, and stopped as a kill right after a batch's commit leaves a query:
    # its last batch (the far bid's) committed a watermark past every window, and the batch of no
    # input that evicts with it is not planned (Spark plans none here).
    spark.conf.set(NO_DATA_BATCHES, "false")
    try:
        run(spark, job.script.read_text(), job.checkpoint)
    finally:
        spark.conf.unset(NO_DATA_BATCHES)
    queries = [Checkpoint(LocalFiles(), str(job.checkpoint)).query(sink) for sink in SINKS]
    assert all(query.planned() == query.committed() for query in queries)
    # (A query that ended before the random kill evicted with that watermark already.)
    assert any(query.committed_watermark(query.committed()[-1]) > query.last_watermark() for query in queries)
    assert missing_and_extra(expected, sink_rows(job.root))[0] > 0, "windows wait for the evicting batch"
    # A start with no new input: Spark alone would plan that batch only once new input comes.
    run(spark, job.script.read_text(), job.checkpoint)

    actual = sink_rows(job.root)
    assert duplicates(actual) == 0, job.log
    assert missing_and_extra(expected, actual) == (0, 0), job.log
    assert actual == expected
    assert not list(job.root.glob("out/*/_staging/*")), "replays leave no staged file behind"

"""A node lost mid-stream: a job on the Spark standalone cluster loses a worker (SIGKILL to the
worker and the executor it runs) between micro-batches, and still writes exactly the rows of an
uninterrupted run, restarting from its checkpoint if the query itself failed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from stategate.provider.shipping import job_py_files
from tests.spark_jobs.crashes import SINKS, duplicates, job_script, missing_and_extra, sink_rows, write_bids

FILES, ROWS_PER_FILE = 6, 40
MAIN = Path(sys.modules["stategate.spark_jobs.job"].__file__).with_name("__main__.py")


def submit(cluster, root: Path, log: Path) -> subprocess.Popen:
    """spark-submit, as the example DAG runs it: the code shipped as a zip in --py-files."""
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.master_url,
               "--conf", "spark.cores.max=2", "--conf", "spark.executor.memory=512m",
               "--py-files", job_py_files(), str(MAIN),
               "run", "--sql", str(root / "job.sql"), "--checkpoint", str(root / "checkpoint")]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.Popen(command, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


def committed(root: Path) -> int:
    return sum(len(list((root / "checkpoint" / sink / "commits").glob("[0-9]*"))) for sink in SINKS)


def test_a_worker_killed_mid_stream_loses_and_repeats_nothing(uninterrupted, spark_cluster, tmp_path: Path) -> None:
    expected = uninterrupted(FILES, ROWS_PER_FILE)

    root = tmp_path / "cluster"
    write_bids(root / "incoming", FILES, ROWS_PER_FILE)
    (root / "job.sql").write_text(job_script(root))
    spark_cluster.add_worker()  # the session's cluster keeps two workers after losing one
    log = tmp_path / "submit.log"
    job = submit(spark_cluster, root, log)
    deadline = time.monotonic() + 300
    while committed(root) < 4:
        assert job.poll() is None, f"the job ended before the kill: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "no micro-batch committed on the cluster"
        time.sleep(0.2)
    batches_before = committed(root)
    killed = spark_cluster.kill_busy_worker()
    attempts = [job.wait(timeout=600)]
    if attempts[-1] != 0:  # the query failed with the node: restart it from the checkpoint
        attempts.append(submit(spark_cluster, root, log).wait(timeout=600))
    assert attempts[-1] == 0, log.read_text()[-3000:]
    assert committed(root) > batches_before, f"no batch ran after worker {killed} was killed"

    actual = sink_rows(root)
    assert duplicates(actual) == 0
    assert missing_and_extra(expected, actual) == (0, 0), attempts
    assert actual == expected

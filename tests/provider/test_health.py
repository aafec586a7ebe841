"""What "healthy" means for a version just started: a micro-batch of its own committed, by the
checkpoint's own logs (the job's announcement beside them says from which batch on). Real files in a
real deployment root; the sensor asked as Airflow asks it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException

from stategate.provider.hooks.deployment import DeploymentHook
from stategate.provider.sensors.health import JobHealthSensor
from stategate.spark_jobs.checkpoint import Application, AppState

STARTED = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


def announce(root: Path, app: Application) -> None:
    DeploymentHook(f"file://{root}", "job").checkpoint.announce(app)


def commit(root: Path, batch: int) -> None:
    commits = root / "job" / "checkpoint" / "Out" / "commits"
    commits.mkdir(parents=True, exist_ok=True)
    (commits / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def plan(root: Path, batch: int, files: int) -> None:
    """The offset log's entry of ``batch``: Spark's file source up to its ``files``-th log entry."""
    offsets = root / "job" / "checkpoint" / "Out" / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    (offsets / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":0}}\n{{"logOffset":{files}}}')


def poke(root: Path, run_started: datetime = STARTED - timedelta(minutes=1)) -> bool:
    sensor = JobHealthSensor(task_id="healthy", job_name="job", root=f"file://{root}", timeout=60)
    return sensor.poke({"dag_run": SimpleNamespace(start_date=run_started)})


def application(**changes) -> Application:
    now = datetime.now(timezone.utc).isoformat()
    return replace(Application("app-2", "spark://m:7077", "host", 7, "processing-time=1 seconds", "digest",
                               STARTED.isoformat(), now, 1.0, AppState.RUNNING, {"Out": 4}), **changes)


def test_healthy_once_the_new_version_commits_a_micro_batch_of_its_own(tmp_path) -> None:
    commit(tmp_path, 4)  # what the version before it committed
    announce(tmp_path, application())
    assert not poke(tmp_path), "nothing committed since it started"
    commit(tmp_path, 5)
    assert poke(tmp_path)


def test_a_micro_batch_that_reads_no_input_does_not_count(tmp_path) -> None:
    """Spark's first batch at a restart may only evict state with the watermark the last one moved
    (a no-data batch): it commits whatever the version does with a row, so it proves nothing."""
    plan(tmp_path, 4, files=7)
    commit(tmp_path, 4)
    announce(tmp_path, application())
    plan(tmp_path, 5, files=7)
    commit(tmp_path, 5)
    assert not poke(tmp_path), "batch 5 read nothing"
    plan(tmp_path, 6, files=8)
    commit(tmp_path, 6)
    assert poke(tmp_path)


def test_a_first_start_is_healthy_at_its_first_commit(tmp_path) -> None:
    announce(tmp_path, application(committed_at_start={"Out": None}))
    assert not poke(tmp_path)
    commit(tmp_path, 0)
    assert poke(tmp_path)


def test_the_previous_version_does_not_count(tmp_path) -> None:
    """Before the version this run started says it runs, the checkpoint still names the previous
    one (a cluster still scheduling the new driver): not yet, whatever that one did."""
    commit(tmp_path, 9)
    announce(tmp_path, application(started_at=(STARTED - timedelta(hours=1)).isoformat(), state=AppState.STOPPED))
    assert not poke(tmp_path)


@pytest.mark.parametrize("changes, said", [
    ({"state": AppState.FAILED, "detail": "query Out ended with an error: boom"}, r"is failed \(query Out ended"),
    ({"heartbeat_at": (datetime.now(timezone.utc) - timedelta(minutes=5)).isoformat()}, "its driver fell silent"),
])
def test_a_version_that_fails_or_falls_silent_is_unhealthy_at_once(tmp_path, changes, said) -> None:
    commit(tmp_path, 4)
    announce(tmp_path, application(**changes))
    with pytest.raises(AirflowFailException, match=said):
        poke(tmp_path)

"""A fleet's job file is checked where Airflow parses it: one whose trigger Spark cannot run gets a DAG
that fails at once, naming the file and the trigger, before anything is read or submitted; the other
jobs' DAGs are unaffected."""

from __future__ import annotations

from airflow.utils.state import DagRunState

import pytest

from stategate.provider.fleet import JobSpec, JobSpecError
from stategate.provider.xcom import GATE_TASK_ID
from tests.provider.conftest import JOBS, fleet_job

SQL = "CREATE TABLE t (x INT) WITH ('connector' = 'datagen');\n"


def test_a_job_file_with_a_trigger_spark_cannot_run_gets_a_dag_that_says_so(tmp_path) -> None:
    try:
        broken = fleet_job("typo_trigger", SQL, f"file://{tmp_path}", trigger="processing-time=10s")
        with pytest.raises(JobSpecError) as refused:
            JobSpec.load(JOBS / "typo_trigger.yaml")
        assert str(refused.value).startswith(f"{JOBS / 'typo_trigger.yaml'}: job typo_trigger: unknown trigger "
                                             "'processing-time=10s'")
        assert "broken" in broken.tags and broken.description == f"broken job file: {refused.value}"[:200]
        run = broken.test()
        assert run.state == DagRunState.FAILED
        assert not any(tmp_path.iterdir()), "a broken job file wrote into its root"

        always_on = fleet_job("always_on", SQL, f"file://{tmp_path}", trigger="processing-time=1 minute 30 seconds")
        assert "broken" not in always_on.tags
        assert always_on.task_dict[GATE_TASK_ID].trigger == "processing-time=1 minute 30 seconds"
    finally:
        for job in ("typo_trigger", "always_on"):
            for suffix in (".sql", ".yaml"):
                (JOBS / f"{job}{suffix}").unlink(missing_ok=True)

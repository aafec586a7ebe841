"""Whoever may trigger a redeploy chooses only what the DAG's author allows (issue 40).

A job of the example fleet, deployed once for real; then runs triggered with a conf that points its
SQL, root, checkpoint root, connection or name elsewhere, or that gives an allowed choice a value it
does not have. Each is refused by the gate before anything is read or written: every file under the
test's folder (the job root, a secret beside it, where the conf points) is compared byte for byte,
and what the gate says never quotes the file it was pointed at. The same DAG with allowed choices
redeploys as usual.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.provider.conftest import JOBS, fleet_dag, fleet_job
from tests.provider.test_redeploy_dag import gate_said, job_sql, snapshot

SECRET = "root:x:0:0:root:/root:/bin/bash\n"


@pytest.fixture(scope="module")
def deployed(airflow_home, tmp_path_factory):
    """The job ``guarded``, deployed once; a secret file outside its places."""
    data = tmp_path_factory.mktemp("guarded")
    (data / "incoming").mkdir()
    (data / "outside").mkdir()
    (data / "outside" / "secret.sql").write_text(SECRET)
    root = f"file://{data / 'root'}"
    dag = fleet_job("guarded", job_sql(data, 10, False, "totals"), root)
    first = dag.test()
    assert first.state == "success"
    return data, dag


def states(run) -> dict[str, str | None]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


@pytest.mark.parametrize("key, value", [
    ("sql", "{data}/outside/secret.sql"),
    ("root", "file://{data}/elsewhere"),
    ("checkpoint_root", "file://{data}/elsewhere"),
    ("job", "other"),
    ("conn_id", "aws_default"),
])
def test_a_conf_pointing_the_job_elsewhere_is_refused_before_anything_is_read(deployed, key: str,
                                                                               value: str) -> None:
    data, dag = deployed
    before = snapshot(data)
    run = dag.test(run_conf={key: value.format(data=data)})
    assert run.state == "failed" and states(run)["gate"] == "failed"
    assert {t: s for t, s in states(run).items() if t not in ("gate", "release_lock") and s not in (
        "skipped", "upstream_failed", None)} == {}
    said = gate_said(run)
    assert f"this run's conf sets {key}, which a trigger may not choose" in said
    assert "root:x" not in said and not (data / "elsewhere").exists()
    assert snapshot(data) == before, "a refused run changed files"


@pytest.mark.parametrize("conf", [{"on_unknown": "yes"}, {"replay": "everything"}])
def test_an_allowed_choice_takes_only_its_values(deployed, conf: dict) -> None:
    from airflow.sdk.definitions.param import ParamValidationError

    data, dag = deployed
    before = snapshot(data)
    try:
        run = dag.test(run_conf=conf)
    except ParamValidationError as refused:  # Airflow refused the run itself
        assert list(conf)[0] in str(refused)
    else:
        assert run.state == "failed" and states(run)["gate"] == "failed"
    assert snapshot(data) == before


def test_the_sql_is_read_only_inside_the_jobs_folder_links_resolved(deployed) -> None:
    """A job file whose SQL is a link to a file outside its folder (or a path out of it): refused by
    the parameter's name, the file never read."""
    data, _ = deployed
    (JOBS / "linked.sql").symlink_to(data / "outside" / "secret.sql")
    (JOBS / "linked_job.yaml").write_text(f"sql: linked.sql\nroot: file://{data / 'root'}\nschedule: null\n")
    linked = fleet_dag("linked_job")
    before = snapshot(data)
    run = linked.test()
    assert run.state == "failed"
    said = gate_said(run)
    assert "the parameter 'sql' names a file outside the job's SQL directory" in said and "root:x" not in said
    assert snapshot(data) == before


def test_allowed_choices_redeploy(deployed) -> None:
    data, dag = deployed
    run = dag.test(run_conf={"on_unknown": "fail", "replay": "full"})
    assert run.state == "success" and states(run)["submit_restart"] == "success"
    assert not Path(data / "elsewhere").exists()

"""The gate's branch for every verdict, first deploy, bad SQL and each ``on_unknown`` policy,
run by real Airflow (``dag.test()`` on a migrated SQLite DB) against a real deployment root."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from stategate.analyzer import build
from stategate.analyzer.layout import plan
from stategate.analyzer.signature import state_signature
from stategate.provider.hooks.deployment import DeploymentHook
from tests.analyzer.seed_cases import runnable, tvf
from tests.provider.conftest import HOME, NOTIFIED
from tests.servers import free_port, listening, start, stop

BRANCHES = ("restart", "clear", "first_deploy", "approval")
#: How the seeds' MyTable is declared: over files.
MY_TABLE_FILES = "'connector' = 'filesystem', 'path' = '/data/my_table', 'format' = 'csv'"
V1 = runnable(tvf("a, sum(b) AS s, max(c) AS m"))
CHANGES = {
    "FULL": runnable(tvf("a, max(c) AS m, sum(b) AS s")),
    "PARTIAL": runnable(tvf("a, sum(b) AS s, max(c) AS m, count(*) AS n")),
    "INCOMPATIBLE": runnable(tvf("a, sum(b) AS s, max(c) AS m", size="INTERVAL '5' MINUTE")),
    "UNKNOWN": "SET 'table.exec.state.ttl' = '1 h';\n" + V1,
}


@pytest.fixture(scope="module")
def gate_dag(airflow_home):
    from gate_cases import dag  # the copy in the dags folder, as the scheduler sees it

    return dag


def deploy(root: Path, sql: str = V1, state: bool = True) -> None:
    job = root / "job"
    job.mkdir(parents=True)
    if state:
        (job / "checkpoint" / "offsets").mkdir(parents=True)
        (job / "checkpoint" / "offsets" / "0").write_text("v1")
    # As the record task leaves it: the SQL and the state layout the job recorded.
    model = build(sql)
    (job / "deployment.json").write_text(json.dumps({"sql": sql, "verdict": "FIRST_DEPLOY",
                                                     "signature": state_signature(model, plan(model))}))


def run_gate(dag, tmp_path: Path, sql: str, on_unknown: str = "approve"):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    script = tmp_path / "job.sql"
    script.write_text(sql)
    NOTIFIED.unlink(missing_ok=True)
    run = dag.test(run_conf={"sql": str(script), "root": f"file://{tmp_path / 'root'}", "job": "job",
                             "on_unknown": on_unknown})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    with create_session() as session:
        rows = session.scalars(select(XComModel).where(XComModel.run_id == run.run_id,
                                                       XComModel.task_id == "gate")).all()
        xcoms = {row.key: XComModel.deserialize_value(row) for row in rows}
    return run, states, xcoms


def taken(states: dict) -> list[str]:
    return [b for b in BRANCHES if states.get(b) == "success"]


def test_first_deploy_starts_fresh(gate_dag, tmp_path) -> None:
    run, states, xcoms = run_gate(gate_dag, tmp_path, V1)
    assert taken(states) == ["first_deploy"]
    assert xcoms["verdict"] == "FIRST_DEPLOY"
    assert Path(xcoms["staged_sql"]).read_text() == V1
    assert xcoms["checkpoint"] == str(tmp_path / "root" / "job" / "checkpoint")


def test_a_record_without_state_is_a_fresh_start(gate_dag, tmp_path) -> None:
    deploy(tmp_path / "root", state=False)
    _, states, _ = run_gate(gate_dag, tmp_path, CHANGES["INCOMPATIBLE"])
    assert taken(states) == ["first_deploy"]


@pytest.mark.parametrize("verdict, branch", [("FULL", "restart"), ("PARTIAL", "restart"),
                                             ("INCOMPATIBLE", "clear"), ("UNKNOWN", "approval")])
def test_branch_per_verdict(gate_dag, tmp_path, verdict: str, branch: str) -> None:
    deploy(tmp_path / "root")
    run, states, xcoms = run_gate(gate_dag, tmp_path, CHANGES[verdict])
    assert run.state == "success"
    assert taken(states) == [branch]
    assert xcoms["verdict"] == verdict and xcoms["report"]["verdict"] == verdict
    assert f"**{verdict}**" in xcoms["report_markdown"]
    notified = [json.loads(line) for line in NOTIFIED.read_text().splitlines()] if NOTIFIED.exists() else []
    if verdict in ("INCOMPATIBLE", "UNKNOWN"):
        assert notified and notified[0]["message"].startswith(f"{verdict}|### State compatibility")
        assert notified[0]["report"]["verdict"] == verdict
    else:
        assert not notified


@pytest.mark.parametrize("policy, branch", [("approve", "approval"), ("clear_state", "clear")])
def test_on_unknown_policies(gate_dag, tmp_path, policy: str, branch: str) -> None:
    deploy(tmp_path / "root")
    _, states, _ = run_gate(gate_dag, tmp_path, CHANGES["UNKNOWN"], on_unknown=policy)
    assert taken(states) == [branch]


def test_on_unknown_fail_fails_the_gate_and_runs_nothing(gate_dag, tmp_path) -> None:
    deploy(tmp_path / "root")
    run, states, _ = run_gate(gate_dag, tmp_path, CHANGES["UNKNOWN"], on_unknown="fail")
    assert run.state == "failed" and states["gate"] == "failed"
    assert taken(states) == []
    assert lock_holder(tmp_path) is None, "a failed gate releases its lock"


def test_sql_that_does_not_parse_fails_with_the_parser_message(gate_dag, tmp_path, caplog) -> None:
    deploy(tmp_path / "root")
    run, states, _ = run_gate(gate_dag, tmp_path, "SELECT (a FROM MyTable")
    assert run.state == "failed" and states["gate"] == "failed"
    assert taken(states) == []
    assert json.loads((tmp_path / "root" / "job" / "deployment.json").read_text())["sql"] == V1


DAG_FILE = """
import pendulum
from airflow.sdk import DAG
from stategate.provider.operators.gate import StateGateOperator

with DAG("{name}", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    StateGateOperator(task_id="gate", job_name="j", sql="j.sql", root="file:///tmp/j", trigger="{trigger}")
"""


def test_a_dag_with_a_trigger_spark_cannot_run_does_not_import(tmp_path) -> None:
    """A typo in the trigger shows as the DAG file's import error, where Airflow's UI lists those:
    the gate never runs with it, so no redeploy stops a job it cannot start again."""
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "typo.py").write_text(DAG_FILE.format(name="typo", trigger="processing-time=10s"))
    (tmp_path / "fine.py").write_text(DAG_FILE.format(name="fine", trigger="processing-time=10 seconds"))
    bag = DagBag(dag_folder=str(tmp_path))
    assert set(bag.dag_ids) == {"fine"}
    assert list(bag.import_errors) == [str(tmp_path / "typo.py")]
    assert "unknown trigger 'processing-time=10s': use available-now or processing-time=<interval>" in \
        bag.import_errors[str(tmp_path / "typo.py")]


def test_a_second_redeploy_waits_for_the_lock(gate_dag, tmp_path) -> None:
    deploy(tmp_path / "root")
    lock = tmp_path / "root" / "job" / "lock"
    lock.mkdir()
    (lock / f"{1:020d}.json").write_text(json.dumps({"owner": "another-run", "since": "now"}))
    run, states, _ = run_gate(gate_dag, tmp_path, CHANGES["FULL"])
    assert run.state == "failed" and taken(states) == []
    assert lock_holder(tmp_path)["owner"] == "another-run"


def test_a_lock_left_by_a_finished_run_is_taken_over(gate_dag, tmp_path) -> None:
    """gate_cases has no release task: each run ends holding the lock, as a run whose teardown never
    ran would. The next gate asks Airflow for that run's state and takes the lock over."""
    deploy(tmp_path / "root")
    first, _, _ = run_gate(gate_dag, tmp_path, CHANGES["FULL"])
    assert first.state == "success" and lock_holder(tmp_path)["owner"] == first.run_id
    second, states, _ = run_gate(gate_dag, tmp_path, CHANGES["PARTIAL"])
    assert second.state == "success" and taken(states) == ["restart"]
    holder = lock_holder(tmp_path)
    assert (holder["owner"], holder["dag_id"]) == (second.run_id, "gate_cases")


@pytest.mark.parametrize("watermark_ms, branch, verdict", [(500, "clear", "INCOMPATIBLE"), (2_000, "restart", "PARTIAL")])
def test_a_retired_slot_is_free_to_the_gate_once_the_checkpoint_watermark_passed_it(
        gate_dag, tmp_path, watermark_ms: int, branch: str, verdict: str) -> None:
    """The job's record says slot 1 held MAX(c) until a redeploy dropped it, and that no window open
    then can be read once the watermark reaches 1,000 ms; Spark's offset log gives the watermark."""
    from stategate.analyzer.layout import GENERIC, JobLayout, Retired, Slots, StageLayout

    narrow = "SET 'stategate.state.slots' = '2';\n"
    # Over a Kafka topic: a change that does not fit cannot re-seed, so the slot decides.
    kafka = ("'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:9092', "
             "'format' = 'json'")
    deployed_sql = runnable(tvf("a, sum(b) AS s"), narrow).replace(MY_TABLE_FILES, kafka)
    new_sql = runnable(tvf("a, sum(b) AS s, count(*) AS n"), narrow).replace(MY_TABLE_FILES, kafka)
    assert kafka in new_sql
    deploy(tmp_path / "root", deployed_sql)
    checkpoint = tmp_path / "root" / "job" / "checkpoint"
    # Both slots generic: the second, retired, takes any aggregate once it is free.
    plain = Slots((GENERIC, GENERIC), (("SUM(MyTable.b)", 0),), (Retired(1, "MAX(MyTable.c)", 1_000),))
    layout = JobLayout({"Out": (StageLayout(plain, Slots(), Slots()),)})
    (checkpoint / "_stategate").mkdir()
    (checkpoint / "_stategate" / "signature.json").write_text(
        json.dumps(state_signature(build(deployed_sql), layout)))
    (checkpoint / "Out" / "offsets").mkdir(parents=True)
    (checkpoint / "Out" / "offsets" / "7").write_text(
        f'v1\n{{"batchWatermarkMs":{watermark_ms},"batchTimestampMs":0,"conf":{{}}}}\n{{"logOffset":6}}\n')
    run, states, xcoms = run_gate(gate_dag, tmp_path, new_sql)
    assert run.state == "success" and taken(states) == [branch]
    assert xcoms["verdict"] == verdict
    rules = {f["rule"] for f in xcoms["report"]["findings"]}
    assert ("stategate.layout.no-room" in rules) == (verdict == "INCOMPATIBLE")
    if verdict == "PARTIAL":
        slots = xcoms["deployment"]["signature"]["pipelines"]["Out"]["stages"][0]["slots"]["plain"]
        assert slots == {"width": 2, "shapes": [str(GENERIC)] * 2, "assigned": {"SUM(MyTable.b)": 0, "COUNT(*)": 1},
                         "retired": []}


def lock_holder(tmp_path) -> dict | None:
    return DeploymentHook(f"file://{tmp_path / 'root'}", "job").lock.holder()


@pytest.fixture(scope="module")
def api_server(airflow_home: Path):
    """``airflow api-server`` on 127.0.0.1 over the tests' metadata DB; every request is an admin's
    (the simple auth manager's all-admins mode), as on a developer's machine."""
    port = free_port()
    server = start([sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1", "--port", str(port)],
                   lambda: listening(port), timeout=120, log=str(HOME / "api-server.log"),
                   env={"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"})
    yield f"http://127.0.0.1:{port}"
    stop(server)


@pytest.mark.parametrize("verdict, row", [
    ("INCOMPATIBLE", "| INCOMPATIBLE | `window-tvf.window.size` |"),
    ("PARTIAL", "| PARTIAL | `window-tvf.aggregate.added` |"),
])
def test_the_web_ui_shows_the_gate_verdict_and_report_without_the_logs(api_server, gate_dag, tmp_path, verdict,
                                                                       row) -> None:
    """A real API server, asked what Airflow's web UI asks for the gate task of a DAG run (its
    Rendered Templates view reads the task instance's rendered fields)."""
    deploy(tmp_path / "root")
    run, states, _ = run_gate(gate_dag, tmp_path, CHANGES[verdict])
    assert states["gate"] == "success"
    url = f"{api_server}/api/v2/dags/{gate_dag.dag_id}/dagRuns/{quote(run.run_id, safe='')}/taskInstances/gate"
    with urllib.request.urlopen(url, timeout=60) as response:
        fields = json.load(response)["rendered_fields"]
    assert fields["verdict"] == verdict
    assert fields["report_markdown"].startswith(f"### State compatibility: **{verdict}**")
    assert row in fields["report_markdown"]

"""``stategate check NEW.sql --deployed ROOT --job NAME``: the gate's answer, before deploy, from the
job's deployment root (its record and the state layout its checkpoint recorded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from stategate.analyzer import build
from stategate.analyzer.layout import plan
from stategate.analyzer.signature import state_signature
from stategate.provider.hooks.deployment import DeploymentHook
from stategate.provider.deployment.records import DeploymentRecord
from stategate.spark_jobs.checkpoint import RECORD_DIR
from tests.analyzer.seed_cases import legacy, runnable

NARROW = "SET 'stategate.state.slots' = '3';\n"
FILES = "'connector' = 'filesystem', 'path' = '/data/my_table', 'format' = 'csv'"
V1 = runnable(legacy("a, SUM(b), MAX(c)"), NARROW)
ONE_MORE = runnable(legacy("a, SUM(b), MAX(c), COUNT(c)"), NARROW)
TWO_MORE = runnable(legacy("a, SUM(b), MAX(c), COUNT(c), MIN(c)"), NARROW)


def check(*args: str) -> subprocess.CompletedProcess:
    # The provider tests' AIRFLOW_HOME (conftest) is inherited: a private, migrated Airflow.
    return subprocess.run([str(Path(sys.executable).parent / "stategate"), "check", *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def deploy(root: Path, sql: str) -> None:
    """A deployment as the DAG leaves it: the record, and the job's signature beside its state (a
    planned micro-batch of its query)."""
    hook = DeploymentHook(f"file://{root}", "bids")
    model = build(sql)
    signature = state_signature(model, plan(model))
    hook.records.write(DeploymentRecord(sql, "FIRST_DEPLOY", "bids", signature))
    (hook.job.checkpoint / RECORD_DIR).mkdir(parents=True)
    (hook.job.checkpoint / RECORD_DIR / "signature.json").write_text(json.dumps(signature))
    (hook.job.checkpoint / "Out" / "offsets").mkdir(parents=True)
    (hook.job.checkpoint / "Out" / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":0}\n')


def test_the_deployed_record_and_layout_decide(tmp_path: Path) -> None:
    deploy(tmp_path, V1)
    new = tmp_path / "new.sql"
    new.write_text(ONE_MORE)
    fits = check(str(new), "--deployed", f"file://{tmp_path}", "--job", "bids")
    assert fits.returncode == 0, fits.stderr
    assert fits.stdout.startswith("Verdict: PARTIAL") and "added (start from zero): COUNT(MyTable.c)" in fits.stdout
    # Three slots: the two aggregates and one free. One added aggregate fits; two do not, so the
    # restart re-seeds the state into a new layout (a TUMBLE job over files can be re-seeded).
    new.write_text(TWO_MORE)
    full = check(str(new), "--deployed", str(tmp_path), "--job", "bids", "--format", "json", "--fail-on", "incompatible")
    assert full.returncode == 0
    report = json.loads(full.stdout)
    assert report["verdict"] == "PARTIAL"
    assert "stategate.layout.reseed" in {f["rule"] for f in report["findings"]}
    # Without the deployment root the two files alone do not know the slots: PARTIAL.
    old = tmp_path / "old.sql"
    old.write_text(V1)
    assert check(str(old), str(new)).stdout.startswith("Verdict: PARTIAL")
    # Over a Kafka topic the state cannot be re-seeded: two added aggregates do not fit.
    kafka = "'connector' = 'kafka', 'topic' = 'bids', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'format' = 'json'"
    deploy(tmp_path / "kafka", V1.replace(FILES, kafka))
    new.write_text(TWO_MORE.replace(FILES, kafka))
    full = check(str(new), "--deployed", str(tmp_path / "kafka"), "--job", "bids", "--format", "json",
                 "--fail-on", "incompatible")
    assert full.returncode == 1
    report = json.loads(full.stdout)
    assert report["verdict"] == "INCOMPATIBLE"
    [finding] = [f for f in report["findings"] if f["rule"] == "stategate.layout.no-room"]
    assert "cannot be re-seeded: only a file source is re-read" in finding["message"]


def test_a_job_never_deployed_is_a_first_deploy(tmp_path: Path) -> None:
    new = tmp_path / "new.sql"
    new.write_text(V1)
    result = check(str(new), "--deployed", f"file://{tmp_path}", "--job", "clicks")
    assert result.returncode == 0
    assert result.stdout.startswith("Verdict: FIRST_DEPLOY — no deployed version of clicks")


def test_bad_arguments_exit_2_naming_the_problem(tmp_path: Path) -> None:
    new = tmp_path / "new.sql"
    new.write_text(V1)
    no_job = check(str(new), "--deployed", str(tmp_path))
    assert no_job.returncode == 2 and "--deployed needs --job NAME" in no_job.stderr
    bad_name = check(str(new), "--deployed", str(tmp_path), "--job", "../etc")
    assert bad_name.returncode == 2 and "job name '../etc'" in bad_name.stderr
    assert "Traceback" not in no_job.stderr + bad_name.stderr


def test_sql_the_gate_would_refuse_exits_2_with_its_message(tmp_path: Path) -> None:
    """The gate's answer before deploy: SQL the Spark job cannot run, or a job it cannot deploy (a
    table read but not declared), gets no verdict, with the message the gate gives."""
    deploy(tmp_path, V1)
    new = tmp_path / "new.sql"
    new.write_text(runnable(legacy("a, SUM(b), MAX(c), MEDIAN(c)"), NARROW))
    refused = check(str(new), "--deployed", str(tmp_path), "--job", "bids")
    assert refused.returncode == 2 and not refused.stdout
    assert "aggregate MEDIAN(c) is not supported" in refused.stderr and f"{new}:" in refused.stderr
    new.write_text(ONE_MORE.replace("FROM MyTable", "FROM Elsewhere"))
    undeclared = check(str(new), "--deployed", str(tmp_path), "--job", "bids")
    assert undeclared.returncode == 2 and "table Elsewhere is read but not declared" in undeclared.stderr

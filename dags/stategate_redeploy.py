"""Scheduled, safe redeploys of a Spark Structured Streaming window job.

Every run picks up the job's current SQL file and lets the gate decide::

    gate ─► restart ─────────────────────────────────► submit_restart ─┐
        ├─► clear ───────────► clear_state ─► submit_fresh (take-over) ──┼─► record
        ├─► first_deploy ───────────────────► submit_fresh               │
        └─► approval ─► approved_restart ───► submit_restart ────────────┘
                     └► approved_clear ─────► clear_state
    release_lock: teardown, frees the redeploy lock whatever happened

spark-submit gets the job's code as a zip (``py_files``) built from the installed stategate, so
pointing the ``spark_default`` connection at a cluster (``spark://``, YARN, Kubernetes) is all a
cluster needs. Unchanged SQL is a FULL restart that simply continues the stream: with the ``available-now``
trigger each run processes what arrived since the last one. Settings come from the DAG params
(or the ``STATEGATE_*`` environment variables that give their defaults).
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Param

from stategate import spark_jobs
from stategate.provider import xcom
from stategate.provider.operators.approval import StateApprovalOperator
from stategate.provider.operators.clear_state import ClearStateOperator
from stategate.provider.operators.gate import StateGateOperator
from stategate.provider.operators.record import RecordDeploymentOperator, ReleaseLockOperator
from stategate.provider.shipping import job_py_files

APPLICATION = str(Path(spark_jobs.__file__).with_name("__main__.py"))
DEMO = Path(__file__).with_name("stategate_demo")
JOIN = "none_failed_min_one_success"

with DAG(
    dag_id="stategate_redeploy",
    description="Redeploy a streaming window job: restart, or clear state, as its SQL change allows",
    schedule=os.environ.get("STATEGATE_SCHEDULE", "@hourly"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={
        "job": Param(os.environ.get("STATEGATE_JOB", "bids"), type="string"),
        "sql": Param(os.environ.get("STATEGATE_SQL", str(DEMO / "current.sql")), type="string"),
        "root": Param(os.environ.get("STATEGATE_ROOT", "file:///tmp/stategate"), type="string"),
        # An object-store root's Airflow connection, and where checkpoints live if not under root
        # (records on S3, checkpoints on the cluster's HDFS, say). Empty: none / under root.
        "conn_id": Param(os.environ.get("STATEGATE_CONN_ID", ""), type="string"),
        "checkpoint_root": Param(os.environ.get("STATEGATE_CHECKPOINT_ROOT", ""), type="string"),
        "on_unknown": Param(os.environ.get("STATEGATE_ON_UNKNOWN", "approve"),
                            enum=["approve", "clear_state", "fail"]),
        # After a clear-state, what the new version reads again: what its open windows need
        # (bounded), everything (full), or nothing the old version read (none).
        "replay": Param(os.environ.get("STATEGATE_REPLAY", "bounded"), enum=["bounded", "full", "none"]),
    },
    tags=["stategate", "spark"],
    # Rendered where spark-submit runs: the zip of the code the job's driver imports.
    user_defined_macros={"stategate_py_files": job_py_files},
) as dag:
    job = dict(job_name="{{ params.job }}", root="{{ params.root }}", conn_id="{{ params.conn_id }}",
               checkpoint_root="{{ params.checkpoint_root }}")
    gate = StateGateOperator(task_id=xcom.GATE_TASK_ID, sql="{{ params.sql }}", on_unknown="{{ params.on_unknown }}", **job)
    restart = EmptyOperator(task_id="restart")
    clear = EmptyOperator(task_id="clear")
    first_deploy = EmptyOperator(task_id="first_deploy")
    approval = StateApprovalOperator(task_id="approval", response_timeout=timedelta(hours=12),
                                     subject="stategate: UNKNOWN state compatibility for {{ params.job }}")
    approved_restart = EmptyOperator(task_id="approved_restart")
    approved_clear = EmptyOperator(task_id="approved_clear")
    clear_state = ClearStateOperator(task_id="clear_state", trigger_rule=JOIN, **job)

    submit = dict(
        application=APPLICATION,
        conn_id="spark_default",
        name="stategate-{{ params.job }}",
        py_files="{{ stategate_py_files() }}",
        env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
        trigger_rule=JOIN,
    )
    args = ["run", "--sql", xcom.pulled(xcom.STAGED_SQL), "--checkpoint", xcom.pulled(xcom.CHECKPOINT),
            "--trigger", "available-now"]
    # The gate's verdict bounds what the job may accept: UNKNOWN only reaches here via a human.
    submit_restart = SparkSubmitOperator(
        task_id="submit_restart",
        application_args=[*args, "--accept", xcom.pulled(xcom.VERDICT)], **submit)
    # After a clear-state the new version takes over from the archived checkpoint; on a first
    # deploy nothing was archived and the argument is empty.
    submit_fresh = SparkSubmitOperator(
        task_id="submit_fresh", application_args=[
            *args, "--fresh", "--take-over=" + xcom.pulled_or_empty(xcom.ARCHIVED, "clear_state"),
            "--replay={{ params.replay }}"], **submit)
    record = RecordDeploymentOperator(task_id="record", trigger_rule=JOIN, **job)
    release_lock = ReleaseLockOperator(task_id="release_lock", **job).as_teardown(setups=gate)

    gate >> [restart, clear, first_deploy, approval]
    approval >> [approved_restart, approved_clear]
    [restart, approved_restart] >> submit_restart
    [clear, approved_clear] >> clear_state >> submit_fresh
    first_deploy >> submit_fresh
    [submit_restart, submit_fresh] >> record >> release_lock

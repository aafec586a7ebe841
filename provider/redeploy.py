"""The redeploy DAG of one job, built from its :class:`~stategate.provider.fleet.JobSpec`.

::

    gate ─► restart ─────────────────────────────────► submit_restart ─┐
        ├─► clear ───────────► clear_state ─► submit_fresh (take-over) ──┼─► record
        ├─► first_deploy ───────────────────► submit_fresh               │
        └─► approval ─► approved_restart ───► submit_restart ────────────┘
                     └► approved_clear ─────► clear_state
    release_lock: teardown, frees the redeploy lock whatever happened

spark-submit gets the job's code as a zip (``py_files``) built from the installed stategate, so
pointing the job's Spark connection at a cluster (``spark://``, YARN, Kubernetes) is all a cluster
needs. What a trigger may choose is the DAG's params (``on_unknown``, ``replay``), each validated;
everything else is the spec's, fixed when the DAG is built.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param

from stategate import spark_jobs
from stategate.provider import xcom
from stategate.provider.fleet import DAG_ID, SPEC_SUFFIX, JobSpec, JobSpecError
from stategate.provider.hooks.deployment import OnUnknown
from stategate.provider.operators.approval import StateApprovalOperator
from stategate.provider.operators.clear_state import ClearStateOperator
from stategate.provider.operators.gate import StateGateOperator
from stategate.provider.operators.record import RecordDeploymentOperator, ReleaseLockOperator
from stategate.provider.shipping import job_py_files
from stategate.spark_jobs.cutover import REPLAY_POLICIES

#: The job's Spark application: the installed ``stategate.spark_jobs``.
APPLICATION = str(Path(spark_jobs.__file__).with_name("__main__.py"))
START = pendulum.datetime(2026, 1, 1, tz="UTC")
#: How long a human has to answer an UNKNOWN verdict.
APPROVAL_TIMEOUT = timedelta(hours=12)
JOIN = "none_failed_min_one_success"


def fleet_dags(folder: Path) -> dict[str, Any]:
    """A DAG per job file (``*.yaml``) in ``folder``, by DAG id, for a DAG file's globals. A job file
    that cannot be read still gets its DAG, whose one task fails with the reason: one broken file
    never hides the other jobs."""
    dag_file = sys._getframe(1).f_code.co_filename
    dags = {}
    for path in sorted(folder.glob(f"*{SPEC_SUFFIX}")):
        try:
            dag = redeploy_dag(JobSpec.load(path), dag_file=dag_file)
        except JobSpecError as error:
            dag = _broken(path.stem, str(error), dag_file)
        dags[dag.dag_id] = dag
    return dags


def redeploy_dag(spec: JobSpec, *, dag_file: str | None = None) -> DAG:
    """The redeploy DAG of one job. ``dag_file`` is the DAG file that builds it (default: the
    caller's), where Airflow's workers find it again."""
    with DAG(
        dag_id=DAG_ID.format(spec.name),
        description=f"Redeploy {spec.name}: restart, or clear state, as its SQL change allows",
        schedule=spec.schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        params={
            "on_unknown": Param(spec.on_unknown.value, enum=[p.value for p in OnUnknown]),
            # After a clear-state, what the new version reads again: what its open windows need
            # (bounded), everything (full), or nothing the old version read (none).
            "replay": Param(spec.replay, enum=list(REPLAY_POLICIES)),
        },
        tags=["stategate", "spark"],
        # Rendered where spark-submit runs: the zip of the code the job's driver imports.
        user_defined_macros={"stategate_py_files": job_py_files},
    ) as dag:
        job: dict[str, Any] = dict(job_name=spec.name, root=spec.root, conn_id=spec.conn_id or "",
                   checkpoint_root=spec.checkpoint_root or "")
        gate = StateGateOperator(task_id=xcom.GATE_TASK_ID, sql=str(spec.sql), sql_dir=str(spec.directory),
                                 on_unknown="{{ params.on_unknown }}", replay="{{ params.replay }}", **job)
        restart = EmptyOperator(task_id="restart")
        clear = EmptyOperator(task_id="clear")
        first_deploy = EmptyOperator(task_id="first_deploy")
        approval = StateApprovalOperator(task_id="approval", response_timeout=APPROVAL_TIMEOUT,
                                         subject=f"stategate: UNKNOWN state compatibility for {spec.name}")
        approved_restart = EmptyOperator(task_id="approved_restart")
        approved_clear = EmptyOperator(task_id="approved_clear")
        clear_state = ClearStateOperator(task_id="clear_state", trigger_rule=JOIN, **job)
        submit: dict[str, Any] = dict(
            application=APPLICATION,
            conn_id=spec.spark.conn_id,
            name=f"stategate-{spec.name}",
            py_files="{{ stategate_py_files() }}",
            conf=dict(spec.spark.conf),
            packages=spec.spark.packages,
            env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
            trigger_rule=JOIN,
        )
        args = ["run", "--sql", xcom.pulled(xcom.STAGED_SQL), "--checkpoint", xcom.pulled(xcom.CHECKPOINT),
                "--trigger", spec.trigger]
        # The gate's verdict bounds what the job may accept: UNKNOWN only reaches here via a human.
        submit_restart = SparkSubmitOperator(
            task_id="submit_restart", application_args=[*args, "--accept", xcom.pulled(xcom.VERDICT)], **submit)
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
    dag.fileloc = dag_file or sys._getframe(1).f_code.co_filename
    return dag


def _broken(name: str, error: str, dag_file: str) -> DAG:
    """A job file that cannot be read, as a DAG whose one task says why."""

    def refuse() -> None:
        raise JobSpecError(error)

    with DAG(DAG_ID.format(name), schedule=None, start_date=START, catchup=False,
             description=f"broken job file: {error}"[:200], tags=["stategate", "broken"]) as dag:
        PythonOperator(task_id="job_file", python_callable=refuse)
    dag.fileloc = dag_file
    return dag

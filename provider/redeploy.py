"""The redeploy DAG of one job, built from its :class:`~stategate.provider.fleet.JobSpec`.

::

    gate ─► unchanged (an always-on job already runs this SQL) ──────────────────────────────┐
        ├─► restart ──────────────────┬─► stop_restart ─► submit_restart ─┐                    │
        ├─► approval ─► approved_restart                                  │                    │
        │            └► approved_clear ─┬─► stop_clear ─► clear_state ─► submit_fresh ─┤       │
        ├─► clear ──────────────────────┘                                  │            │       │
        ├─► first_deploy ─────────────────────────────────────────────────┘            │       │
        └─► restore (a rollback) ─► stop_restore ─► restore_state ─► submit_restart    │       │
                                                     healthy (always on) ─► record ─────┴───────┴─► release_lock
                                                     └ failed ─► roll_back ─► resubmit

Every path that restarts, archives or restores the state stops the running job first (after the
micro-batch it is in: :class:`~stategate.provider.operators.stop.StopJobOperator`); nothing stops
before the gate has judged the new SQL. An always-on job (``trigger: processing-time=...``) is
submitted detached from its task (``--detach`` in client deploy mode; without waiting for the
application on YARN and Kubernetes, in cluster mode) and must commit a micro-batch within
``healthy_within`` (:class:`~stategate.provider.sensors.health.JobHealthSensor`), else the
redeploy rolls back by itself: the new version stopped, the deployed version's state restored
where the redeploy cleared it, the deployed SQL submitted again. A trigger may choose
``on_unknown``, ``replay`` and ``rollback`` (return to the previous deployment), each validated;
everything else is the spec's, fixed when the DAG is built. spark-submit gets the job's code as a
zip (``py_files``) built from the installed stategate, so pointing the job's Spark connection at a
cluster is all a cluster needs.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, BaseNotifier, Param, TriggerRule

from stategate import spark_jobs
from stategate.provider import xcom
from stategate.provider.fleet import DAG_ID, SPEC_SUFFIX, JobSpec, JobSpecError
from stategate.provider.hooks.deployment import OnUnknown
from stategate.provider.operators.approval import StateApprovalOperator
from stategate.provider.operators.clear_state import ClearStateOperator
from stategate.provider.operators.gate import StateGateOperator
from stategate.provider.operators.record import RecordDeploymentOperator, ReleaseLockOperator
from stategate.provider.operators.rollback import RestoreStateOperator, RollbackOperator
from stategate.provider.operators.stop import StopJobOperator
from stategate.provider.sensors.health import JobHealthSensor
from stategate.provider.shipping import job_py_files
from stategate.spark_jobs.cutover import REPLAY_POLICIES

#: The job's Spark application: the installed ``stategate.spark_jobs``.
APPLICATION = str(Path(spark_jobs.__file__).with_name("__main__.py"))
START = pendulum.datetime(2026, 1, 1, tz="UTC")
#: How long a human has to answer an UNKNOWN verdict.
APPROVAL_TIMEOUT = timedelta(hours=12)
JOIN = "none_failed_min_one_success"


def fleet_dags(folder: Path, *, notifiers: Sequence[BaseNotifier] | None = None) -> dict[str, Any]:
    """A DAG per job file (``*.yaml``) in ``folder``, by DAG id, for a DAG file's globals. A job file
    that cannot be read still gets its DAG, whose one task fails with the reason: one broken file
    never hides the other jobs.

    :param folder: the fleet's folder of job files and their SQL
    :param notifiers: told of every job's INCOMPATIBLE and UNKNOWN verdicts (default: the task log)
    """
    dag_file = sys._getframe(1).f_code.co_filename
    dags = {}
    for path in sorted(folder.glob(f"*{SPEC_SUFFIX}")):
        try:
            dag = redeploy_dag(JobSpec.load(path), notifiers=notifiers, dag_file=dag_file)
        except JobSpecError as error:
            dag = _broken(path.stem, str(error), dag_file)
        dags[dag.dag_id] = dag
    return dags


def redeploy_dag(spec: JobSpec, *, notifiers: Sequence[BaseNotifier] | None = None,
                 dag_file: str | None = None) -> DAG:
    """The redeploy DAG of one job.

    :param spec: the job, as its DAG's author fixes it
    :param notifiers: told of INCOMPATIBLE and UNKNOWN verdicts (default: the task log)
    :param dag_file: the DAG file that builds it (default: the caller's), where Airflow's workers
        find it again
    """
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
            # Return to the deployment before the version that last ran, instead of the job's SQL.
            "rollback": Param(False, type="boolean"),
        },
        tags=["stategate", "spark"],
        # Rendered where spark-submit runs: the zip of the code the job's driver imports.
        user_defined_macros={"stategate_py_files": job_py_files},
    ) as dag:
        job: dict[str, Any] = dict(job_name=spec.name, root=spec.root, conn_id=spec.conn_id or "",
                                   checkpoint_root=spec.checkpoint_root or "")
        gate = StateGateOperator(task_id=xcom.GATE_TASK_ID, sql=str(spec.sql), sql_dir=str(spec.directory),
                                 on_unknown="{{ params.on_unknown }}", replay="{{ params.replay }}",
                                 rollback="{{ params.rollback }}", trigger=spec.trigger, notifiers=notifiers,
                                 **job)
        unchanged, restart, clear, first_deploy, restore, approved_restart, approved_clear = (
            EmptyOperator(task_id=name) for name in ("unchanged", "restart", "clear", "first_deploy", "restore",
                                                     "approved_restart", "approved_clear"))
        approval = StateApprovalOperator(task_id="approval", response_timeout=APPROVAL_TIMEOUT,
                                         subject=f"stategate: UNKNOWN state compatibility for {spec.name}")
        stop_restart, stop_clear, stop_restore = (
            StopJobOperator(task_id=name, timeout=spec.stop_timeout, trigger_rule=JOIN, **job)
            for name in ("stop_restart", "stop_clear", "stop_restore"))
        clear_state = ClearStateOperator(task_id="clear_state", **job)
        restore_state = RestoreStateOperator(task_id="restore_state", **job)
        args = ["run", "--sql", xcom.pulled(xcom.STAGED_SQL), "--checkpoint", xcom.pulled(xcom.CHECKPOINT),
                "--trigger", spec.trigger, *_detached(spec)]
        # The gate's verdict bounds what the job may accept: UNKNOWN only reaches here via a human.
        submit_restart = SparkSubmitOperator(
            task_id="submit_restart", application_args=[*args, "--accept", xcom.pulled(xcom.ACCEPT)],
            **_submit(spec))
        # After a clear-state the new version takes over from the archived checkpoint; on a first
        # deploy nothing was archived and the argument is empty.
        submit_fresh = SparkSubmitOperator(
            task_id="submit_fresh", application_args=[
                *args, "--fresh", "--take-over=" + xcom.pulled_or_empty(xcom.ARCHIVED, "clear_state"),
                "--replay={{ params.replay }}"], **_submit(spec))
        record = RecordDeploymentOperator(task_id="record", trigger_rule=JOIN, **job)
        release_lock = ReleaseLockOperator(task_id="release_lock", **job).as_teardown(setups=gate)

        gate >> [unchanged, restart, clear, first_deploy, restore, approval]
        approval >> [approved_restart, approved_clear]
        [restart, approved_restart] >> stop_restart >> submit_restart
        [clear, approved_clear] >> stop_clear >> clear_state >> submit_fresh
        first_deploy >> submit_fresh
        restore >> stop_restore >> restore_state >> submit_restart
        submitted = [submit_restart, submit_fresh]
        if spec.always_on:
            healthy = JobHealthSensor(task_id="healthy", timeout=spec.healthy_within, mode="reschedule",
                                      poke_interval=max(1.0, min(10.0, spec.healthy_within / 20)), trigger_rule=JOIN,
                                      **job)
            roll_back = RollbackOperator(task_id="roll_back", stop_timeout=spec.stop_timeout,
                                         trigger_rule=TriggerRule.ONE_FAILED, **job)
            resubmit = SparkSubmitOperator(
                task_id="resubmit", application_args=[
                    "run", "--sql", "{{ ti.xcom_pull(task_ids='roll_back', key='%s') }}" % xcom.STAGED_SQL,
                    "--checkpoint", xcom.pulled(xcom.CHECKPOINT), "--trigger", spec.trigger, "--accept", "UNKNOWN",
                    *_detached(spec)], **_submit(spec))
            submitted >> healthy >> record
            healthy >> roll_back >> resubmit
        else:
            submitted >> record
        [record, unchanged] >> release_lock
    dag.fileloc = dag_file or sys._getframe(1).f_code.co_filename
    return dag


def _detached(spec: JobSpec) -> list[str]:
    """An always-on job's driver on the submitting host runs detached from the submit task."""
    return ["--detach"] if spec.always_on and spec.spark.deploy_mode == "client" else []


def _submit(spec: JobSpec) -> dict[str, Any]:
    """spark-submit's arguments for the job: its connection, deploy mode, settings and packages."""
    conf = dict(spec.spark.conf)
    if spec.always_on and spec.spark.deploy_mode == "cluster":  # the cluster runs it on: do not wait
        conf |= {"spark.yarn.submit.waitAppCompletion": "false",
                 "spark.kubernetes.submission.waitAppCompletion": "false"}
    return dict(application=APPLICATION, conn_id=spec.spark.conn_id, deploy_mode=spec.spark.deploy_mode,
                name=f"stategate-{spec.name}", py_files="{{ stategate_py_files() }}", conf=conf,
                packages=spec.spark.packages, trigger_rule=JOIN,
                env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})


def _broken(name: str, error: str, dag_file: str) -> DAG:
    """A job file that cannot be read, as a DAG whose one task says why."""

    def refuse() -> None:
        raise JobSpecError(error)

    with DAG(DAG_ID.format(name), schedule=None, start_date=START, catchup=False,
             description=f"broken job file: {error}"[:200], tags=["stategate", "broken"]) as dag:
        PythonOperator(task_id="job_file", python_callable=refuse)
    dag.fileloc = dag_file
    return dag

"""The deploy gate: judge the new SQL against the deployed one and branch on the decision."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

from airflow.providers.standard.operators.branch import BaseBranchOperator
from airflow.sdk import BaseNotifier
from airflow.sdk.exceptions import AirflowFailException, AirflowRuntimeError

from stategate.analyzer import JobModel, Report, SQLModelError, build
from stategate.analyzer.runnable import check_runnable
from stategate.provider import xcom
from stategate.provider.hooks.deployment import Branch, Decision, OnUnknown, StateGateError
from stategate.provider.notifiers.log import LogVerdictNotifier
from stategate.provider.operators.base import JobRootOperator
from stategate.spark_jobs.cutover import REPLAY_POLICIES
from stategate.spark_jobs.triggers import AVAILABLE_NOW, interval_s

ON_UNKNOWN = tuple(policy.value for policy in OnUnknown)


class StateGateOperator(JobRootOperator, BaseBranchOperator):
    """Branch a redeploy on the state-compatibility verdict of the job's SQL change.

    A job that runs (always on) with the same SQL under the same trigger → ``unchanged_task_id``
    (left alone). FULL / PARTIAL → ``restart_task_id`` (restart from the checkpoint); INCOMPATIBLE →
    ``clear_task_id`` (archive the state, then start fresh); no deployed version or no state →
    ``first_deploy_task_id``; UNKNOWN → per ``on_unknown``: ``"approve"`` (``approval_task_id``, a
    human decides), ``"clear_state"`` or ``"fail"``. The decision is the hook's
    (:meth:`DeploymentHook.decide`); the gate takes the lock, publishes it and maps it to a task.

    SQL that does not parse, or that holds a construct the Spark job cannot run
    (:func:`analyzer.runnable.check_runnable`), fails the task with the job's own message and place
    before anything is read or written in the job root: no lock taken, nothing staged, the record,
    checkpoint and archive untouched.

    What a trigger may choose: the DAG's declared params only. A run whose conf sets anything else
    (the SQL's path, the root, the job) is refused before anything is read, as is a ``sql`` file
    that resolves (links followed) outside ``sql_dir``, an ``on_unknown`` or a ``replay`` that is
    not one of its values. So a user who may trigger the DAG reads and writes nothing the DAG's
    author did not configure.

    XCom (keys in :mod:`stategate.provider.xcom`): ``report`` (JSON), ``report_markdown``, ``verdict``,
    ``staged_sql`` and ``checkpoint`` (as spark-submit should name them) and ``deployment`` (what
    the record task will store).

    The verdict where operators look: once the gate has run, its ``verdict`` and ``report_markdown``
    are the task's rendered fields (``overwrite_rtif_after_execution``, as the standard provider's
    ``@task.bash`` shows its command), so the task's Rendered Templates view in Airflow's UI shows
    the verdict and the Markdown report, rendered, without opening the logs.

    :param job_name: the job, a directory under ``root``
    :param sql: the job script: a path to a ``.sql`` file or the SQL text itself (templated)
    :param sql_dir: the directory the ``sql`` file must be in, links resolved (None: anywhere; a
        DAG whose ``sql`` a trigger can influence must set it)
    :param root: root of the deployment roots, any ObjectStoragePath URL (templated)
    :param conn_id: connection for an object-store root (templated; empty: none)
    :param checkpoint_root: where checkpoints, archives and staged SQL live when not under ``root``
        (for example records on S3, checkpoints on the cluster's HDFS) (templated; empty: under ``root``)
    :param on_unknown: ``"approve"``, ``"clear_state"`` or ``"fail"`` (templated)
    :param replay: what a clear-state's take-over re-reads, checked here before anything changes:
        ``"bounded"``, ``"full"`` or ``"none"`` (templated)
    :param trigger: the Spark trigger the job is submitted with (``available-now``, or
        ``processing-time=<interval>`` for an always-on job)
    :param unchanged_task_id: the branch of a running job whose SQL and trigger are unchanged
    :param rollback: ``"true"``: return to the deployment before the version that last ran
        (:meth:`DeploymentHook.rollback_target`) instead of deploying ``sql``; its SQL is judged
        like any other, and where the redeploy being undone cleared its state, that state is
        restored (templated)
    :param restore_task_id: the branch of a rollback that restores the archived state
    :param restart_task_id: the branch that restarts from the checkpoint (FULL, PARTIAL)
    :param clear_task_id: the branch that archives the state first (INCOMPATIBLE)
    :param first_deploy_task_id: the branch of a job with no deployed version or no state
    :param approval_task_id: the branch where a human decides (UNKNOWN with ``on_unknown="approve"``)
    :param notifiers: called on INCOMPATIBLE and UNKNOWN verdicts (default: log the report)
    :param lock_wait: seconds to wait while another run redeploys the job, before failing (default 0)
    :param stale_lock_after: take over a lock older than this even if its run cannot be looked up
        (for example a run of another Airflow). A lock whose run has ended in this Airflow is
        always taken over. Default: never by age.
    """

    template_fields: Sequence[str] = (*JobRootOperator.template_fields, "sql", "sql_dir", "on_unknown", "replay",
                                      "rollback", "verdict", "report_markdown")
    template_fields_renderers = {"sql": "sql", "report_markdown": "md"}
    template_ext: Sequence[str] = ()
    overwrite_rtif_after_execution = True
    ui_color = "#f6e7c1"

    def __init__(
        self,
        *,
        sql: str,
        sql_dir: str | None = None,
        on_unknown: str = "approve",
        replay: str = "bounded",
        trigger: str = AVAILABLE_NOW,
        unchanged_task_id: str = "unchanged",
        rollback: str = "false",
        restore_task_id: str = "restore",
        restart_task_id: str = "restart",
        clear_task_id: str = "clear",
        first_deploy_task_id: str = "first_deploy",
        approval_task_id: str = "approval",
        notifiers: Sequence[BaseNotifier] | None = None,
        lock_wait: float = 0,
        stale_lock_after: timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if on_unknown not in ON_UNKNOWN and "{{" not in on_unknown:
            raise ValueError(f"on_unknown must be one of {ON_UNKNOWN}, not {on_unknown!r}")
        interval_s(trigger)  # an unknown trigger fails the DAG's import, never a redeploy half-done
        self.sql = sql
        self.sql_dir = sql_dir
        self.on_unknown = on_unknown
        self.replay = replay
        self.trigger = trigger
        self.unchanged_task_id = unchanged_task_id
        self.rollback = rollback
        self.restore_task_id = restore_task_id
        self.restart_task_id = restart_task_id
        self.clear_task_id = clear_task_id
        self.first_deploy_task_id = first_deploy_task_id
        self.approval_task_id = approval_task_id
        self.notifiers = list(notifiers) if notifiers is not None else [LogVerdictNotifier()]
        self.lock_wait = lock_wait
        self.stale_lock_after = stale_lock_after
        # Set by the run (see the class docstring): what the UI shows once the gate has decided.
        self.verdict = ""
        self.report_markdown = ""

    def choose_branch(self, context) -> str:
        try:
            self._check_conf(context)
            on_unknown = self._on_unknown()
            rollback = self._rollback()
            new = None if rollback else self._model(*self._read_sql())
        except AirflowFailException as refused:
            self.report_markdown = f"**Refused; nothing was read or changed in the job root.** {refused}"
            raise
        hook = self.hook
        run_id = context["run_id"]
        self._lock(context)
        try:
            finished = hook.archiver.finish()
            if finished is not None:
                self.log.warning("finished archiving %s to %s, which a crash had interrupted", self.job_name, finished)
            restore = None
            if new is None:  # a rollback: the SQL of the deployment it returns to
                try:
                    target = hook.rollback_target()
                except StateGateError as error:
                    raise AirflowFailException(str(error)) from None
                new = self._model(target.sql, f"{hook.records.path} (deployed {target.deployed_at})")
                restore = hook.restorable(target)
                self.log.info("rolling %s back to its deployment of %s%s", self.job_name, target.deployed_at,
                              f", restoring its state from {restore}" if restore else "")
            model, sql = new
            decision = hook.decide(model, sql, on_unknown, self.trigger, restore)
            self._publish(context, decision, hook.records.stage_sql(sql, run_id))
            report = decision.judgement.report
            if decision.notify and report is not None:
                self._notify(context, report)
            if decision.branch is Branch.FAIL:
                raise AirflowFailException(f"verdict UNKNOWN for {self.job_name} and on_unknown='fail':\n"
                                           + (report.to_text() if report is not None else ""))
            return self._task_ids[decision.branch]
        except BaseException:
            hook.lock.release(run_id)
            raise

    @property
    def _task_ids(self) -> dict[Branch, str]:
        return {Branch.UNCHANGED: self.unchanged_task_id, Branch.RESTORE: self.restore_task_id,
                Branch.RESTART: self.restart_task_id, Branch.CLEAR: self.clear_task_id,
                Branch.FIRST_DEPLOY: self.first_deploy_task_id, Branch.APPROVAL: self.approval_task_id}

    def _check_conf(self, context) -> None:
        """Refuse a run whose conf sets what its DAG declares no param for: the job's places."""
        declared = set(context["dag"].params)
        conf = context["dag_run"].conf or {}
        extra = sorted(str(key) for key in conf if key not in declared)
        if extra:
            raise AirflowFailException(
                f"this run's conf sets {', '.join(extra)}, which a trigger may not choose (it may choose "
                f"{', '.join(sorted(declared)) or 'nothing'}): the job's SQL, root, checkpoint root, connection "
                "and name are its DAG's. Nothing was read or changed")
        if self.replay not in REPLAY_POLICIES:
            raise AirflowFailException(f"replay must be one of {', '.join(REPLAY_POLICIES)}, not {self.replay!r}; "
                                       "nothing was read or changed")

    def _rollback(self) -> bool:
        text = str(self.rollback).strip().lower()
        if text not in ("true", "false", ""):
            raise AirflowFailException(f"rollback must be true or false, not {self.rollback!r}; nothing was read or "
                                       "changed")
        return text == "true"

    def _on_unknown(self) -> OnUnknown:
        try:
            return OnUnknown(self.on_unknown)
        except ValueError:
            raise AirflowFailException(f"on_unknown must be one of {ON_UNKNOWN}, not {self.on_unknown!r}") from None

    def _model(self, sql: str, source: str) -> tuple[JobModel, str]:
        """The new SQL's model, refused (nothing changed) where it does not parse or holds a
        construct the engine cannot run: with the job's own message and place."""
        try:
            model = build(sql, source=source)
        except SQLModelError as error:
            raise AirflowFailException(f"the new SQL does not parse: {error}") from None
        try:
            check_runnable(model)
        except SQLModelError as error:
            raise AirflowFailException(f"the new SQL cannot run on Spark: {error}") from None
        return model, sql

    def _lock(self, context) -> None:
        """Take the job's redeploy lock for this run (a stale one is taken over, and said so)."""
        ti = context["ti"]
        try:
            stale = self.hook.lock.acquire(context["run_id"], dag_id=context["dag"].dag_id, wait=self.lock_wait,
                                           stale_after=self.stale_lock_after,
                                           holder_finished=lambda holder: _run_ended(ti, holder))
        except StateGateError as error:
            raise AirflowFailException(str(error)) from None
        if stale:
            self.log.warning("took over the redeploy lock of %s from run %s (since %s): that run has "
                             "ended without releasing it", self.job_name, stale.get("owner"), stale.get("since"))

    def _read_sql(self) -> tuple[str, str]:
        """The job's SQL and where it was read: a ``.sql`` file, inside ``sql_dir`` where one is set
        (links resolved, refused before reading otherwise), or the text itself."""
        text = self.sql.strip()
        if "\n" not in text and text.endswith(".sql"):
            path = Path(text)
            if self.sql_dir:
                allowed = Path(self.sql_dir).resolve()
                if not path.resolve().is_relative_to(allowed):
                    raise AirflowFailException(
                        f"the parameter 'sql' names a file outside the job's SQL directory {allowed} (links "
                        "resolved): refused before reading it; nothing was read or changed")
            try:
                return path.read_text(encoding="utf-8"), str(path)
            except OSError as error:
                raise AirflowFailException(f"cannot read the job SQL {path}: {error.strerror}") from None
            except UnicodeDecodeError:
                raise AirflowFailException(f"cannot read the job SQL {path}: it is not UTF-8 text") from None
        if self.sql_dir:
            raise AirflowFailException("the parameter 'sql' is not a .sql file in the job's SQL directory "
                                       f"{self.sql_dir}; nothing was read or changed")
        return self.sql, f"<{self.task_id}.sql>"

    def _publish(self, context, decision: Decision, staged) -> None:
        """The decision where later tasks and people read it: XComs, the log, the rendered fields."""
        ti, hook = context["ti"], self.hook
        report = decision.judgement.report
        self.verdict = decision.record.verdict
        ti.xcom_push(key=xcom.VERDICT, value=self.verdict)
        ti.xcom_push(key=xcom.ACCEPT, value=decision.accept.value)
        ti.xcom_push(key=xcom.STAGED_SQL, value=hook.job.spark_uri(staged))
        ti.xcom_push(key=xcom.CHECKPOINT, value=hook.job.spark_uri(hook.job.checkpoint))
        ti.xcom_push(key=xcom.DEPLOYMENT, value=decision.record.to_dict())
        if decision.restore is not None:
            ti.xcom_push(key=xcom.RESTORE, value=decision.restore)
        if report is None:
            self.report_markdown = f"First deploy of `{self.job_name}`: no deployed version or no state; it starts fresh."
            self.log.info("first deploy of %s: %s; starting fresh", self.job_name, decision.judgement.first_deploy)
            return
        self.log.info("state compatibility of %s:\n%s", self.job_name, report.to_text())
        self.report_markdown = report.to_markdown()
        ti.xcom_push(key=xcom.REPORT, value=report.to_dict())
        ti.xcom_push(key=xcom.REPORT_MARKDOWN, value=self.report_markdown)

    def _notify(self, context, report: Report) -> None:
        extra = {
            "stategate_job": self.job_name,
            "stategate_verdict": report.verdict.value,
            "stategate_meaning": report.verdict.meaning,
            "stategate_report": report.to_dict(),
            "stategate_markdown": self.report_markdown,
        }
        for notifier in self.notifiers:
            # Rendering replaces a notifier's template fields in place: render a copy, so the
            # operator's notifier keeps its templates for the next run in the same process.
            copy.copy(notifier)({**context, **extra})


def _run_ended(ti, holder: dict[str, Any]) -> bool:
    """Whether the DAG run holding a lock has finished, asked of this Airflow's API."""
    if not holder.get("dag_id"):
        return False
    try:
        state = ti.get_dagrun_state(holder["dag_id"], holder["owner"])
    except AirflowRuntimeError:
        return False  # not a run this Airflow knows: only stale_lock_after can judge it
    return state in ("success", "failed")

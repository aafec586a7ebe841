"""The deploy gate: compare the new SQL with the deployed one and branch on the verdict."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

from airflow.providers.standard.operators.branch import BaseBranchOperator
from airflow.sdk import BaseNotifier
from airflow.sdk.exceptions import AirflowFailException, AirflowRuntimeError

from stategate.analyzer import FIRST_DEPLOY, JobModel, Report, SQLModelError, Verdict, build
from stategate.analyzer.layout import JobLayout, NoRoom, plan
from stategate.analyzer.signature import state_signature
from stategate.provider import xcom
from stategate.provider.hooks.deployment import StateGateError
from stategate.provider.notifiers.log import LogVerdictNotifier
from stategate.provider.operators.base import JobRootOperator

ON_UNKNOWN = ("approve", "clear_state", "fail")


class StateGateOperator(JobRootOperator, BaseBranchOperator):
    """Branch a redeploy on the state-compatibility verdict of the job's SQL change.

    FULL / PARTIAL → ``restart_task_id`` (restart from the checkpoint); INCOMPATIBLE →
    ``clear_task_id`` (archive the state, then start fresh); no deployed version or no state →
    ``first_deploy_task_id``; UNKNOWN → per ``on_unknown``: ``"approve"`` (``approval_task_id``, a
    human decides), ``"clear_state"`` or ``"fail"``. SQL that does not parse fails the task.

    XCom (keys in :mod:`stategate.provider.xcom`): ``report`` (JSON), ``report_markdown``, ``verdict``,
    ``staged_sql`` and ``checkpoint`` (as spark-submit should name them) and ``deployment`` (what
    the record task will store).

    The verdict where operators look: once the gate has run, its ``verdict`` and ``report_markdown``
    are the task's rendered fields (``overwrite_rtif_after_execution``, as the standard provider's
    ``@task.bash`` shows its command), so the task's Rendered Templates view in Airflow's UI shows
    the verdict and the Markdown report, rendered, without opening the logs.

    :param job_name: the job, a directory under ``root``
    :param sql: the job script: a path to a ``.sql`` file or the SQL text itself (templated)
    :param root: root of the deployment roots, any ObjectStoragePath URL (templated)
    :param conn_id: connection for an object-store root (templated; empty: none)
    :param checkpoint_root: where checkpoints, archives and staged SQL live when not under ``root``
        (for example records on S3, checkpoints on the cluster's HDFS) (templated; empty: under ``root``)
    :param on_unknown: ``"approve"``, ``"clear_state"`` or ``"fail"`` (templated)
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

    template_fields: Sequence[str] = (*JobRootOperator.template_fields, "sql", "on_unknown", "verdict",
                                      "report_markdown")
    template_fields_renderers = {"sql": "sql", "report_markdown": "md"}
    template_ext: Sequence[str] = ()
    overwrite_rtif_after_execution = True
    ui_color = "#f6e7c1"

    def __init__(
        self,
        *,
        sql: str,
        on_unknown: str = "approve",
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
        self.sql = sql
        self.on_unknown = on_unknown
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
        if self.on_unknown not in ON_UNKNOWN:
            raise AirflowFailException(f"on_unknown must be one of {ON_UNKNOWN}, not {self.on_unknown!r}")
        sql, source = self._read_sql()
        try:
            model = build(sql, source=source)
        except SQLModelError as error:
            raise AirflowFailException(f"the new SQL does not parse: {error}") from None
        hook = self.hook
        run_id = context["run_id"]
        ti = context["ti"]
        try:
            stale = hook.lock.acquire(run_id, dag_id=context["dag"].dag_id, wait=self.lock_wait,
                                      stale_after=self.stale_lock_after,
                                      holder_finished=lambda holder: _run_ended(ti, holder))
        except StateGateError as error:
            raise AirflowFailException(str(error)) from None
        if stale:
            self.log.warning("took over the redeploy lock of %s from run %s (since %s): that run has "
                             "ended without releasing it", self.job_name, stale.get("owner"), stale.get("since"))
        try:
            return self._decide(context, sql, model)
        except BaseException:
            hook.lock.release(run_id)
            raise

    def _read_sql(self) -> tuple[str, str]:
        text = self.sql.strip()
        if "\n" not in text and text.endswith(".sql"):
            path = Path(text)
            try:
                return path.read_text(encoding="utf-8"), str(path)
            except OSError as error:
                raise AirflowFailException(f"cannot read the job SQL {path}: {error}") from None
        return self.sql, f"<{self.task_id}.sql>"

    def _decide(self, context, sql: str, model: JobModel) -> str:
        hook = self.hook
        finished = hook.archiver.finish()
        if finished is not None:
            self.log.warning("finished archiving %s to %s, which a crash had interrupted", self.job_name, finished)
        deployment = hook.compare(model)
        record, report = deployment.record, deployment.report
        verdict = report.verdict if report else None
        staged = hook.records.stage_sql(sql, context["run_id"])
        ti = context["ti"]
        said = verdict.value if verdict else FIRST_DEPLOY
        self.verdict = said
        ti.xcom_push(key=xcom.VERDICT, value=said)
        ti.xcom_push(key=xcom.STAGED_SQL, value=hook.job.spark_uri(staged))
        ti.xcom_push(key=xcom.CHECKPOINT, value=hook.job.spark_uri(hook.job.checkpoint))
        ti.xcom_push(key=xcom.DEPLOYMENT, value={
            "sql": sql,
            "verdict": said,
            "signature": state_signature(model, _layout(model, deployment.signature, verdict,
                                                        deployment.watermarks)),
            "previous_sql": record.get("sql") if record else None,
        })
        if report is None:
            self.report_markdown = f"First deploy of `{self.job_name}`: no deployed version or no state; it starts fresh."
            self.log.info("first deploy of %s: no deployed version or no state; starting fresh", self.job_name)
            return self.first_deploy_task_id
        self.log.info("state compatibility of %s:\n%s", self.job_name, report.to_text())
        self.report_markdown = report.to_markdown()
        summary = report.to_dict()
        ti.xcom_push(key=xcom.REPORT, value=summary)
        ti.xcom_push(key=xcom.REPORT_MARKDOWN, value=self.report_markdown)
        if verdict in (Verdict.FULL, Verdict.PARTIAL):
            return self.restart_task_id
        self._notify(context, report, summary)
        if verdict is Verdict.INCOMPATIBLE or self.on_unknown == "clear_state":
            return self.clear_task_id
        if self.on_unknown == "fail":
            raise AirflowFailException(f"verdict UNKNOWN for {self.job_name} and on_unknown='fail':\n"
                                       + report.to_text())
        return self.approval_task_id

    def _notify(self, context, report: Report, summary: dict) -> None:
        extra = {
            "stategate_job": self.job_name,
            "stategate_verdict": report.verdict.value,
            "stategate_meaning": report.verdict.meaning,
            "stategate_report": summary,
            "stategate_markdown": self.report_markdown,
        }
        for notifier in self.notifiers:
            # Rendering replaces a notifier's template fields in place: render a copy, so the
            # operator's notifier keeps its templates for the next run in the same process.
            copy.copy(notifier)({**context, **extra})


def _layout(model: JobModel, deployed: dict | None, verdict: Verdict | None,
            watermarks: dict[str, int | None]) -> JobLayout:
    """The slots the job will run with: the deployed ones evolved on a restart, fresh otherwise.
    (The job plans them again beside its checkpoint; its record is what the next gate reads.)"""
    if deployed is None or verdict not in (Verdict.FULL, Verdict.PARTIAL, Verdict.UNKNOWN):
        return plan(model)
    try:
        return plan(model, JobLayout.from_signature(deployed), watermarks)
    except NoRoom:  # reported as INCOMPATIBLE already: the state is cleared
        return plan(model)


def _run_ended(ti, holder: dict[str, Any]) -> bool:
    """Whether the DAG run holding a lock has finished, asked of this Airflow's API."""
    if not holder.get("dag_id"):
        return False
    try:
        state = ti.get_dagrun_state(holder["dag_id"], holder["owner"])
    except AirflowRuntimeError:
        return False  # not a run this Airflow knows: only stale_lock_after can judge it
    return state in ("success", "failed")

"""Return a job to its previous deployment: its archived state restored, or its SQL started again."""

from __future__ import annotations

from typing import Any, Sequence

from airflow.sdk.exceptions import AirflowFailException

from stategate.analyzer import build
from stategate.provider import xcom
from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.hooks.deployment import StateGateError
from stategate.provider.operators.base import JobRootOperator
from stategate.provider.operators.clear_state import stamp_of


class RestoreStateOperator(JobRootOperator):
    """A rollback's restore: the deployed checkpoint (the state of the version being undone) is
    archived, the archived state of the version the rollback returns to moved back in its place,
    and the seam kept: the restored version emits no window the undone one emitted. Nothing is
    deleted. Runs after the job was stopped; the restart follows.

    :param gate_task_id: the gate whose decision names the archive to restore (XCom ``restore``)
    """

    ui_color = "#f4e3c3"

    def __init__(self, *, gate_task_id: str = xcom.GATE_TASK_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate_task_id = gate_task_id

    def execute(self, context) -> str | None:
        ti = context["ti"]
        archived = ti.xcom_pull(task_ids=self.gate_task_id, key=xcom.RESTORE)
        draft = DeploymentRecord.from_dict(ti.xcom_pull(task_ids=self.gate_task_id, key=xcom.DEPLOYMENT))
        try:
            replaced = self.hook.restore(archived, build(draft.sql), stamp_of(context))
        except StateGateError as error:
            raise AirflowFailException(str(error)) from None
        self.log.info("restored %s from %s; the state it replaced is archived at %s", self.job_name, archived, replaced)
        return replaced


class RollbackOperator(JobRootOperator):
    """The automatic rollback of a redeploy whose new version did not become healthy, as the Flink
    Kubernetes operator rolls back an upgrade that does not stabilise (:meth:`DeploymentHook.roll_back`):
    the new version is stopped, the state of the deployed version (the recorded one: the new version
    was never recorded) restored where the redeploy cleared it, and its SQL staged for the resubmit
    task (XCom ``staged_sql``), which starts it again; its restart is judged by the job's guard.
    Safe to retry: each step is idempotent.

    :param stop_timeout: seconds to wait for the new version to stop (templated)
    """

    template_fields: Sequence[str] = (*JobRootOperator.template_fields, "stop_timeout")
    ui_color = "#f5c6c6"

    def __init__(self, *, stop_timeout: float = 300, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stop_timeout = stop_timeout

    def execute(self, context) -> str:
        hook = self.hook
        try:
            target, archived = hook.roll_back(float(self.stop_timeout), f"rollback by {context['run_id']}",
                                              stamp_of(context))
        except StateGateError as error:
            raise AirflowFailException(f"the rollback of {self.job_name} stopped: {error}") from None
        report = hook.judge(build(target.sql)).report
        staged = hook.records.stage_sql(target.sql, f"{context['run_id']}-rollback")
        context["ti"].xcom_push(key=xcom.STAGED_SQL, value=hook.job.spark_uri(staged))
        self.log.warning("the new version of %s did not become healthy: rolling back to its deployment of %s%s%s",
                         self.job_name, target.deployed_at, f", its state restored from {archived}" if archived else "",
                         f"\n{report.to_text()}" if report is not None else "")
        return target.deployed_at or ""

"""Record the deployed version once the job has run with it, and release the redeploy lock."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from stategate.provider import xcom
from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.operators.base import JobRootOperator


class RecordDeploymentOperator(JobRootOperator):
    """Replace ``deployment.json`` with what the gate analysed (the old one goes to ``history/``).

    Runs after the Spark job started with the new SQL, so the record never names SQL that is not
    running. Releases the lock the gate took.

    :param gate_task_id: the gate whose ``deployment`` XCom to record
    :param clear_task_id: the task that archived the previous state, if this redeploy cleared it
    """

    def __init__(self, *, gate_task_id: str = xcom.GATE_TASK_ID, clear_task_id: str = "clear_state",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate_task_id = gate_task_id
        self.clear_task_id = clear_task_id

    def execute(self, context) -> dict:
        hook = self.hook
        draft = DeploymentRecord.from_dict(context["ti"].xcom_pull(task_ids=self.gate_task_id, key=xcom.DEPLOYMENT),
                                           f"the gate's {xcom.DEPLOYMENT} XCom")
        # The layout the job recorded beside its state, as it planned it there, is the authority; so
        # is what its driver says of itself.
        app = hook.checkpoint.application()
        record = draft.deployed(signature=hook.checkpoint.signature() or draft.signature,
                                application=asdict(app) if app is not None else None,
                                archived=context["ti"].xcom_pull(task_ids=self.clear_task_id, key=xcom.ARCHIVED),
                                dag_id=context["dag"].dag_id, dag_run_id=context["run_id"])
        hook.records.write(record)
        hook.lock.release(context["run_id"])
        self.log.info("recorded %s as deployed (%s)", self.job_name, record.verdict)
        return {k: v for k, v in record.to_dict().items() if k != "sql"}


class ReleaseLockOperator(JobRootOperator):
    """Teardown: release the gate's lock if this run still holds it (for example after a failure)."""

    def execute(self, context) -> bool:
        released = self.hook.lock.release(context["run_id"])
        if released:
            self.log.info("released the redeploy lock of %s", self.job_name)
        return released

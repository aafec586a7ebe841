"""A human decides an UNKNOWN verdict: restart from the checkpoint, or clear the state."""

from __future__ import annotations

from typing import Any

from airflow.providers.standard.operators.hitl import HITLBranchOperator

from stategate.provider import xcom


class StateApprovalOperator(HITLBranchOperator):
    """The standard provider's human-in-the-loop branch, asking about one job's state.

    The request shows the gate's Markdown report; the answer follows ``restart_task_id`` or
    ``clear_task_id``. Everything else (``assigned_users``, ``notifiers``, ``response_timeout``,
    ``defaults``) is :class:`HITLBranchOperator`'s.

    :param gate_task_id: the gate whose report to show
    :param restart_task_id: the branch the answer "Restart from the checkpoint" follows
    :param clear_task_id: the branch the answer "Clear the state and start fresh" follows
    :param subject: the request's title in Airflow's Required Actions
    """

    RESTART = "Restart from the checkpoint"
    CLEAR = "Clear the state and start fresh"

    def __init__(
        self,
        *,
        gate_task_id: str = xcom.GATE_TASK_ID,
        restart_task_id: str = "approved_restart",
        clear_task_id: str = "approved_clear",
        subject: str = "stategate: the state compatibility of a redeploy is UNKNOWN",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("body", xcom.pulled(xcom.REPORT_MARKDOWN, gate_task_id))
        super().__init__(
            subject=subject,
            options=[self.RESTART, self.CLEAR],
            options_mapping={self.RESTART: restart_task_id, self.CLEAR: clear_task_id},
            **kwargs,
        )

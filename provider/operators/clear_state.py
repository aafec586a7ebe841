"""Clear a job's state by archiving it: nothing is ever deleted."""

from __future__ import annotations

from typing import Any, Sequence

from airflow.sdk.exceptions import AirflowFailException

from stategate.provider import xcom
from stategate.provider.hooks.deployment import StateGateError
from stategate.provider.operators.base import JobRootOperator


class ClearStateOperator(JobRootOperator):
    """Move the job's checkpoint to ``<root>/<job>/archive/<timestamp>/``, never while a job runs on it
    (stop it first: :class:`~stategate.provider.operators.stop.StopJobOperator`).

    An atomic rename where the filesystem allows it; elsewhere copy, verify, then delete. Paths
    outside the job root, ``..`` and symbolic links are refused. Returns the archive location, and
    pushes it as Spark names it (XCom ``archived``): the new version takes over from it.

    :param job_name: the job, a directory under ``root``
    :param root: root of the deployment roots (templated)
    :param state_path: the state to archive, relative to the job root (templated)
    :param conn_id: connection for an object-store root
    """

    template_fields: Sequence[str] = (*JobRootOperator.template_fields, "state_path")
    ui_color = "#f4c7c3"

    def __init__(self, *, state_path: str = "checkpoint", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state_path = state_path

    def execute(self, context) -> str | None:
        hook = self.hook
        try:
            archived = hook.clear_state(self.state_path, stamp_of(context))
        except StateGateError as error:
            raise AirflowFailException(str(error)) from None
        if archived is None:
            self.log.info("no state at %s/%s: nothing to archive", hook.job.state_home, self.state_path)
            return None
        self.log.info("archived the state of %s: moved %s/%s to %s", self.job_name, hook.job.state_home,
                      self.state_path, archived)
        context["ti"].xcom_push(key=xcom.ARCHIVED, value=hook.job.spark_uri(archived))
        return str(archived)


def stamp_of(context) -> str | None:
    """The archive's name for a task try: the run's time and the try (a retry archives anew)."""
    when = context.get("ts_nodash_with_tz") or context.get("ts_nodash")
    return f"{when}-{context['ti'].task_id}-{context['ti'].try_number}" if when else None

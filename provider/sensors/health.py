"""Whether the version just started is healthy: it commits a micro-batch within a deadline."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from airflow.sdk.bases.sensor import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException

from stategate.provider.hooks.deployment import DeploymentHook
from stategate.spark_jobs.checkpoint import AppState


class JobHealthSensor(BaseSensorOperator):
    """Wait until the job started on ``<root>/<job>/checkpoint`` commits a micro-batch of input it
    planned itself (one beyond what was committed when it started, in any of its pipelines; a batch
    that only evicts with a moved watermark, which Spark may run first at a restart, shows nothing
    of what the version does with a row), as the Flink Kubernetes operator waits for an upgraded
    job to become stable. Fails at once if the job ends
    with an error or its driver falls silent; fails at ``timeout`` (the operator's deadline) if no
    micro-batch committed by then: the redeploy's rollback follows. A job with no input over the
    deadline commits nothing, so set the deadline above the input's quietest stretch.

    :param job_name: the job, a directory under ``root`` (templated)
    :param root: root of the deployment roots (templated)
    :param conn_id: connection for an object-store root (templated; empty: none)
    :param checkpoint_root: where checkpoints live when not under ``root`` (templated; empty: under ``root``)
    """

    template_fields: Sequence[str] = ("root", "job_name", "conn_id", "checkpoint_root")
    ui_color = "#d5f5e3"

    def __init__(self, *, job_name: str, root: str, conn_id: str | None = None, checkpoint_root: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name = job_name
        self.root = root
        self.conn_id = conn_id
        self.checkpoint_root = checkpoint_root

    def poke(self, context) -> bool:
        checkpoint = DeploymentHook(self.root, self.job_name, self.conn_id, self.checkpoint_root).checkpoint
        app = checkpoint.application()
        started = context["dag_run"].start_date
        if app is None or (started is not None and datetime.fromisoformat(app.started_at) < started):
            return False  # the version this run started has not said it runs yet (a cluster schedules it)
        progressed = [p for p, before in app.committed_at_start.items()
                      if checkpoint.query(p).committed_input_after(before)]
        if progressed:
            self.log.info("application %s committed a micro-batch of %s", app.id, ", ".join(progressed))
            return True
        if app.state is AppState.FAILED or not app.alive():
            why = app.detail or "its driver fell silent"
            raise AirflowFailException(f"application {app.id} is {app.state.value} ({why}) without committing "
                                       "a micro-batch")
        return False

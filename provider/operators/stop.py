"""Stop the job running on a checkpoint, gracefully, before its state is restarted or archived."""

from __future__ import annotations

from typing import Any, Sequence

from airflow.sdk.exceptions import AirflowFailException

from stategate.provider.operators.base import JobRootOperator


class StopJobOperator(JobRootOperator):
    """Ask the job running on ``<root>/<job>/checkpoint`` to stop, and wait until it is down.

    The request is a file beside the state (:mod:`stategate.spark_jobs.lifecycle`), so it reaches the
    driver wherever it runs; the job finishes and commits the micro-batch it is in (and the batch
    of no input that evicts with the watermark it committed, at the next trigger), then stops. A
    job that is not running is down already. Safe to retry: a second request is the same request.
    On timeout the task fails, the request stands (the job stops after its micro-batch), and
    nothing else changed.

    :param timeout: seconds to wait for the job to stop (templated)
    """

    template_fields: Sequence[str] = (*JobRootOperator.template_fields, "timeout")
    ui_color = "#e8d5f5"

    def __init__(self, *, timeout: float = 300, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout = timeout

    def execute(self, context) -> str:
        stopped = self.hook.stop_job(float(self.timeout), f"Airflow {context['dag'].dag_id} {context['run_id']}")
        if not stopped.down:
            raise AirflowFailException(stopped.message)
        self.log.info("%s", stopped.message)
        return stopped.message

"""The default verdict notifier: the report, in the task log, where on-call looks first."""

from __future__ import annotations

import logging

from airflow.sdk import BaseNotifier

log = logging.getLogger("stategate.verdict")


class LogVerdictNotifier(BaseNotifier):
    """Logs an INCOMPATIBLE or UNKNOWN verdict with its report.

    The gate calls every notifier with the task context plus ``stategate_job``,
    ``stategate_verdict``, ``stategate_meaning`` (what the verdict means for the state),
    ``stategate_report`` (JSON-ready dict) and ``stategate_markdown``; any :class:`BaseNotifier`
    (Slack, SMTP, ...) can use those in its templates, e.g. ``"{{ stategate_markdown }}"``.

    :param message: what is logged, as a warning (templated)
    """

    template_fields = ("message",)

    def __init__(self, message: str = "stategate: {{ stategate_verdict }} for {{ ti.task_id }}\n"
                                      "{{ stategate_markdown }}") -> None:
        super().__init__()
        self.message = message

    def notify(self, context) -> None:
        log.warning("%s", self.message)

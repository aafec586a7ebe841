"""The gate with one empty task per branch, and a notifier that writes what it was told to a file."""

from __future__ import annotations

import json
import os

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, BaseNotifier

from stategate.provider.operators.gate import StateGateOperator


class FileNotifier(BaseNotifier):
    template_fields = ("message",)

    def __init__(self) -> None:
        super().__init__()
        self.message = "{{ stategate_verdict }}|{{ stategate_markdown }}"

    def notify(self, context) -> None:
        with open(os.environ["STATEGATE_TEST_NOTIFIED"], "a") as handle:
            handle.write(json.dumps({"message": self.message,
                                     "report": context["stategate_report"]}) + "\n")


with DAG("gate_cases", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
         params={"job": "job", "sql": "", "root": "", "on_unknown": "approve"}) as dag:
    gate = StateGateOperator(task_id="gate", job_name="{{ params.job }}", sql="{{ params.sql }}",
                             root="{{ params.root }}", on_unknown="{{ params.on_unknown }}",
                             notifiers=[FileNotifier()])
    gate >> [EmptyOperator(task_id=t) for t in ("restart", "clear", "first_deploy", "approval")]

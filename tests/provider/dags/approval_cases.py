"""The gate with a human approval on UNKNOWN verdicts, as in the example DAG."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from stategate.provider.operators.approval import StateApprovalOperator
from stategate.provider.operators.gate import StateGateOperator

with DAG("approval_cases", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
         params={"job": "job", "sql": "", "root": ""}) as dag:
    gate = StateGateOperator(task_id="gate", job_name="{{ params.job }}", sql="{{ params.sql }}",
                             root="{{ params.root }}", on_unknown="approve")
    approval = StateApprovalOperator(task_id="approval", response_timeout=timedelta(minutes=5))
    gate >> [EmptyOperator(task_id=t) for t in ("restart", "clear", "first_deploy")]
    gate >> approval >> [EmptyOperator(task_id="approved_restart"), EmptyOperator(task_id="approved_clear")]

"""The gate alerting by mail, with stategate's verdict mail on Airflow's SMTP notifier."""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from stategate.provider.notifiers.mail import verdict_mail
from stategate.provider.operators.gate import StateGateOperator

with DAG("alert_cases", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
         params={"job": "job", "sql": "", "root": ""}) as dag:
    gate = StateGateOperator(task_id="gate", job_name="{{ params.job }}", sql="{{ params.sql }}",
                             root="{{ params.root }}",
                             notifiers=[verdict_mail("oncall@example.org", smtp_conn_id="stategate_smtp",
                                                     from_email="stategate@example.org")])
    gate >> [EmptyOperator(task_id=t) for t in ("restart", "clear", "first_deploy", "approval")]

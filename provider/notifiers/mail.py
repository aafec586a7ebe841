"""The verdict by mail: Airflow's own SMTP notifier with a subject and body that carry the report.

::

    from stategate.provider.notifiers.mail import verdict_mail

    StateGateOperator(..., notifiers=[verdict_mail(to="data-platform@example.org", smtp_conn_id="smtp_default")])

Needs ``apache-airflow-providers-smtp`` (``pip install airflow-provider-stategate[smtp]``); the
connection holds the server, port, TLS and credentials.
"""

from __future__ import annotations

from typing import Any, Iterable

#: The gate adds these to the context of every notifier it calls (see LogVerdictNotifier).
VERDICT_SUBJECT = "stategate: {{ stategate_verdict }} state compatibility for job {{ stategate_job }}"

VERDICT_HTML = """\
<h3>stategate: <b>{{ stategate_verdict }}</b> for job <code>{{ stategate_job }}</code></h3>
<p>{{ stategate_meaning }}</p>
<p>DAG <code>{{ dag.dag_id }}</code>, run <code>{{ run_id }}</code>, task <code>{{ ti.task_id }}</code>.</p>
<table border="1" cellpadding="4" cellspacing="0">
<tr><th>effect</th><th>rule</th><th>pipeline</th><th>finding</th><th>before</th><th>after</th></tr>
{% for f in stategate_report.findings %}<tr><td>{{ f.effect }}</td><td><code>{{ f.rule }}</code></td>\
<td>{{ f.pipeline }}</td><td>{{ f.message }}</td><td><code>{{ f.before }}</code></td>\
<td><code>{{ f.after }}</code></td></tr>{% endfor %}
</table>
{% if stategate_report.plan %}<ul>{% for line in stategate_report.plan %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}
"""


def verdict_mail(to: str | Iterable[str], *, smtp_conn_id: str = "smtp_default", from_email: str | None = None,
                 **kwargs: Any):
    """Airflow's :class:`SmtpNotifier` sending the gate's verdict, job, DAG run and rule-by-rule
    table. ``kwargs`` go to the notifier (``cc``, ``subject``, ``html_content`` to override...).

    :param to: recipients
    :param smtp_conn_id: the SMTP connection
    :param from_email: the sender (default: the connection's ``from_email``)
    """
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    return SmtpNotifier(to=to, from_email=from_email, smtp_conn_id=smtp_conn_id,
                        **{"subject": VERDICT_SUBJECT, "html_content": VERDICT_HTML, **kwargs})

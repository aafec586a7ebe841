"""The XComs the gate pushes, by key, and the templates that pull them into later tasks.

The approval task shows the report, spark-submit reads the staged SQL, the checkpoint and the
verdict, and the record task stores the deployment: one name per value, here."""

from __future__ import annotations

#: The report as JSON (``Report.to_dict``); only when a deployed version was compared.
REPORT = "report"
#: The report as Markdown, for the approval request and notifications.
REPORT_MARKDOWN = "report_markdown"
#: FULL, PARTIAL, UNKNOWN, INCOMPATIBLE, or ``analyzer.FIRST_DEPLOY`` (``RESTORED``: a rollback
#: that restores the archived state of the version it returns to).
VERDICT = "verdict"
#: The worst verdict the restarted job may accept (``run --accept``): the gate's, or FULL where a
#: rollback restored the state the job's own SQL built.
ACCEPT = "accept"
#: The new SQL as staged for spark-submit (a URI the cluster reads).
STAGED_SQL = "staged_sql"
#: The job's checkpoint, as spark-submit should name it.
CHECKPOINT = "checkpoint"
#: What the record task stores once the job runs: the SQL, its verdict, its state layout.
DEPLOYMENT = "deployment"
#: The archived checkpoint a clear-state moved away, as spark-submit should name it: the new
#: version takes over from it (``run --take-over``).
ARCHIVED = "archived"
#: The archived checkpoint a rollback restores (the gate's decision).
RESTORE = "restore"

#: The task id the gate has unless a DAG names it otherwise.
GATE_TASK_ID = "gate"


def pulled(key: str, gate_task_id: str = GATE_TASK_ID) -> str:
    """A template rendering the gate's XCom ``key``, for a templated field of a later task."""
    return "{{ ti.xcom_pull(task_ids='%s', key='%s') }}" % (gate_task_id, key)


def pulled_or_empty(key: str, task_id: str) -> str:
    """A template rendering ``task_id``'s XCom ``key``, or nothing when that task pushed none (it
    was skipped, or had nothing to push)."""
    return "{{ ti.xcom_pull(task_ids='%s', key='%s') or '' }}" % (task_id, key)

"""An INCOMPATIBLE verdict reaches people: Airflow's SMTP notifier, configured by stategate's
``verdict_mail``, sends to a real SMTP server on 127.0.0.1 (aiosmtpd, storing into a Maildir)."""

from __future__ import annotations

import json
import mailbox
import os
import sys
import time
from pathlib import Path

import pytest

from tests.provider.test_gate import CHANGES, deploy
from tests.servers import free_port, listening, start, stop


@pytest.fixture
def smtp_server(tmp_path: Path):
    """aiosmtpd on a free port, every message into ``tmp_path/maildir``; the Airflow connection
    ``stategate_smtp`` points at it."""
    port = free_port()
    maildir = tmp_path / "maildir"
    server = start([sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{port}",
                    "-c", "aiosmtpd.handlers.Mailbox", str(maildir)],
                   lambda: listening(port), log=str(tmp_path / "smtp.log"))
    os.environ["AIRFLOW_CONN_STATEGATE_SMTP"] = json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": port,
        "extra": {"disable_tls": True, "disable_ssl": True, "timeout": 10, "retry_limit": 1}})
    yield maildir
    stop(server)
    del os.environ["AIRFLOW_CONN_STATEGATE_SMTP"]


def received(maildir: Path, timeout: float = 30) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (maildir / "new").is_dir():
            messages = [mailbox.MaildirMessage(open(p, "rb").read()) for p in (maildir / "new").iterdir()]
            if messages:
                return messages
        time.sleep(0.2)
    return []


def test_an_incompatible_verdict_is_mailed_with_its_report(airflow_home, smtp_server: Path, tmp_path: Path) -> None:
    from alert_cases import dag

    deploy(tmp_path / "root")
    (tmp_path / "root" / "job").rename(tmp_path / "root" / "bids-hourly")
    script = tmp_path / "job.sql"
    script.write_text(CHANGES["INCOMPATIBLE"])
    run = dag.test(run_conf={"sql": str(script), "root": f"file://{tmp_path / 'root'}", "job": "bids-hourly"})
    assert run.state == "success"
    assert {ti.task_id for ti in run.get_task_instances() if ti.state == "success"} == {"gate", "clear"}

    [message] = received(smtp_server)
    assert message["Subject"] == "stategate: INCOMPATIBLE state compatibility for job bids-hourly"
    assert message["To"] == "oncall@example.org" and message["From"] == "stategate@example.org"
    body = next(part for part in message.walk() if part.get_content_type() == "text/html")
    html = body.get_payload(decode=True).decode()
    assert f"run <code>{run.run_id}</code>" in html and "DAG <code>alert_cases</code>" in html
    assert "<td>INCOMPATIBLE</td><td><code>window-tvf.window.size</code></td>" in html.replace("\n", "")
    assert "all state is cleared (archived first)" in html
    assert "the state cannot be reused; clear it (archived) and let the new version take over" in html


def test_a_compatible_change_sends_nothing(airflow_home, smtp_server: Path, tmp_path: Path) -> None:
    from alert_cases import dag

    deploy(tmp_path / "root")
    script = tmp_path / "job.sql"
    script.write_text(CHANGES["PARTIAL"])
    run = dag.test(run_conf={"sql": str(script), "root": f"file://{tmp_path / 'root'}", "job": "job"})
    assert run.state == "success"
    assert received(smtp_server, timeout=2) == []

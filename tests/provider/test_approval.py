"""UNKNOWN with ``on_unknown="approve"``: a human decides between restart and clear state.

The run waits at the standard provider's ``HITLBranchOperator``; the answer is given through
Airflow's own HITL API handler (what the Required Actions UI calls), from another thread, as a
person would while the run waits.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from stategate.provider.operators.approval import StateApprovalOperator
from tests.provider.test_gate import CHANGES, deploy

OPTIONS = {"approved_restart": StateApprovalOperator.RESTART, "approved_clear": StateApprovalOperator.CLEAR}


def answer(run_holder: dict, choice: str, timeout: float = 120) -> None:
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.datamodels.hitl import UpdateHITLDetailPayload
    from airflow.api_fastapi.core_api.routes.public.hitl import update_hitl_detail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with create_session() as session:
            ti = session.scalar(select(TaskInstance).where(
                TaskInstance.dag_id == "approval_cases", TaskInstance.task_id == "approval",
                TaskInstance.state == "awaiting_input"))
            if ti is not None:
                run_holder["asked"] = ti.run_id
                update_hitl_detail(dag_id="approval_cases", dag_run_id=ti.run_id, task_id="approval",
                                   update_hitl_detail_payload=UpdateHITLDetailPayload(chosen_options=[choice]),
                                   user=SimpleAuthManagerUser(username="on-call", role="admin"),
                                   session=session)
                return
        time.sleep(0.5)


@pytest.mark.parametrize("chosen", list(OPTIONS))
def test_a_human_chooses_restart_or_clear(airflow_home, tmp_path: Path, chosen: str) -> None:
    from approval_cases import dag

    deploy(tmp_path / "root")
    script = tmp_path / "job.sql"
    script.write_text(CHANGES["UNKNOWN"])
    holder: dict = {}
    responder = threading.Thread(target=answer, args=(holder, OPTIONS[chosen]), daemon=True)
    responder.start()
    run = dag.test(run_conf={"sql": str(script), "root": f"file://{tmp_path / 'root'}", "job": "job"})
    responder.join(timeout=5)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert holder.get("asked") == run.run_id, "the run waited for a human"
    assert run.state == "success"
    other = next(o for o in OPTIONS if o != chosen)
    assert states["approval"] == "success" and states[chosen] == "success" and states[other] == "skipped"
    assert all(states[t] == "skipped" for t in ("restart", "clear", "first_deploy"))

"""Concurrent redeploys of one job, by real processes: one lock holder at a time, stale locks taken
over, and a deployment record that no reader ever sees half-written."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.hooks.deployment import DeploymentHook, StateGateError

PROCESSES, ROUNDS = 4, 8
RECORD_PADDING = "x" * 300_000  # a big record: a torn write would be easy to catch mid-way


def redeploy(root: str, name: str, counter: str, conn_id: str | None = None, rounds: int = ROUNDS) -> None:
    """What a gate → record → release sequence does to the job root, ``rounds`` times."""
    hook = DeploymentHook(root, "job", conn_id)
    for round_ in range(rounds):
        owner = f"{name}-{round_}"
        hook.lock.acquire(owner, dag_id="redeploy", wait=120, poll=0.001, stale_after=timedelta(minutes=10))
        try:
            count = int(Path(counter).read_text())  # read, pause, write: lost if two run at once
            time.sleep(0.003)
            assert hook.lock.holder()["owner"] == owner, "another run took the lock while it was held"
            Path(counter).write_text(str(count + 1))
            hook.records.write(DeploymentRecord(f"-- {owner}\n{RECORD_PADDING}", "FULL", job=owner,
                                                deployed_at=datetime.now(timezone.utc).isoformat()))
        finally:
            assert hook.lock.release(owner)


def read_records(root: str, stop: str, result: str, conn_id: str | None = None) -> None:
    hook = DeploymentHook(root, "job", conn_id)
    reads = torn = 0
    while not os.path.exists(stop):
        try:
            record = hook.records.read()
        except ValueError:
            torn += 1
        else:
            reads += record is not None and record.sql.endswith(RECORD_PADDING)
    Path(result).write_text(json.dumps({"reads": reads, "torn": torn}))


def hold_lock(root: str, ready: str) -> None:
    DeploymentHook(root, "job").lock.acquire("killed-run", dag_id="redeploy")
    Path(ready).touch()
    time.sleep(600)


def race_redeploys(root: str, spawn, tmp_path: Path, conn_id: str | None = None, rounds: int = ROUNDS) -> None:
    """``PROCESSES`` redeployers racing ``rounds`` times each, two readers watching the record,
    and a lock left by a run that died an hour ago, which the racers must take over once."""
    hook = DeploymentHook(root, "job", conn_id)
    (hook.lock.path / f"{1:020d}.json").parent.mkdir(parents=True, exist_ok=True)
    (hook.lock.path / f"{1:020d}.json").write_text(json.dumps({"owner": "dead-run", "since": "2026-01-01T00:00:00+00:00"}))
    counter, stop = tmp_path / "counter", tmp_path / "stop"
    counter.write_text("0")
    readers = [spawn(read_records, root, str(stop), str(tmp_path / f"reads-{i}"), conn_id) for i in range(2)]
    writers = [spawn(redeploy, root, f"p{i}", str(counter), conn_id, rounds) for i in range(PROCESSES)]
    for writer in writers:
        writer.join(timeout=600)
        assert writer.exitcode == 0
    stop.touch()
    for reader in readers:
        reader.join(timeout=60)
    assert int(counter.read_text()) == PROCESSES * rounds, "two redeploys held the lock at once"
    assert len(hook.records.history()) == PROCESSES * rounds - 1
    assert hook.lock.holder() is None
    for i in range(2):
        reads = json.loads((tmp_path / f"reads-{i}").read_text())
        assert reads["torn"] == 0 and reads["reads"] > 0, reads


def test_concurrent_redeploys_take_turns_and_records_are_never_torn(tmp_path: Path, spawn) -> None:
    race_redeploys(f"file://{tmp_path / 'root'}", spawn, tmp_path)
    assert not [p.name for p in (tmp_path / "root" / "job").iterdir() if p.name.endswith(".tmp")]


def test_a_lock_of_a_killed_process_is_held_until_judged_stale(tmp_path: Path, spawn) -> None:
    root = f"file://{tmp_path / 'root'}"
    ready = tmp_path / "ready"
    holder = spawn(hold_lock, root, str(ready))
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert time.monotonic() < deadline and holder.is_alive()
        time.sleep(0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()

    hook = DeploymentHook(root, "job")
    started = time.monotonic()
    with pytest.raises(StateGateError, match=r"being redeployed by run 'killed-run' of DAG 'redeploy' since "
                                             r".* after waiting 1 s\. .* delete .*lock"):
        hook.lock.acquire("next-run", wait=1, poll=0.1)
    assert time.monotonic() - started >= 1, "the second redeploy waited before failing"
    assert hook.lock.holder()["owner"] == "killed-run"
    # Judged by the holder's run (what the gate asks Airflow) or by age: either takes it over.
    assert hook.lock.acquire("next-run", holder_finished=lambda h: h["owner"] == "killed-run")["owner"] == "killed-run"
    assert hook.lock.release("next-run")
    hold = spawn(hold_lock, root, str(tmp_path / "ready-2"))
    while not (tmp_path / "ready-2").exists():
        time.sleep(0.05)
    hold.kill()
    time.sleep(1.1)
    assert hook.lock.acquire("third-run", stale_after=timedelta(seconds=1))["owner"] == "killed-run"
    assert hook.lock.holder()["owner"] == "third-run"

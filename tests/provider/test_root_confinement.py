"""Storage stays inside the job root under a hostile root: links, edited intents, odd names, bad records.

Real directories and real symbolic links on the local filesystem. Every refusal must leave both
sides as they were: what the link points at, and the job root itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stategate.provider.deployment.records import MAX_RECORD_BYTES, DeploymentRecord
from stategate.provider.hooks.deployment import DeploymentHook, StateGateError


def make_state(path: Path) -> None:
    (path / "offsets").mkdir(parents=True)
    (path / "offsets" / "0").write_text("batch 0")


def snapshot(path: Path) -> dict[str, str]:
    """Every file below ``path`` (links not followed) and its content: what must not change."""
    found = {}
    for folder, dirs, files in os.walk(path):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            full = os.path.join(folder, name)
            found[os.path.relpath(full, path)] = os.readlink(full) if os.path.islink(full) else Path(full).read_text()
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Someone else's state, which a link in the job root points at."""
    other = tmp_path / "elsewhere"
    make_state(other / "checkpoint")
    (other / "deployment.json").write_text(json.dumps({"sql": "SELECT 1"}))
    (other / "history").mkdir()
    return other


def every_operation(hook: DeploymentHook) -> list:
    return [
        lambda: hook.records.write(DeploymentRecord("v2", "FULL", deployed_at="2026-01-02T00:00:00+00:00")),
        lambda: hook.records.read(),
        lambda: hook.records.history(),
        lambda: hook.records.stage_sql("SELECT 2", "run-1"),
        lambda: hook.lock.acquire("run-1"),
        lambda: hook.archiver.archive("checkpoint", stamp="T1"),
    ]


def test_a_job_directory_that_is_a_link_is_refused_for_everything(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "job").symlink_to(outside)
    hook = DeploymentHook(f"file://{tmp_path / 'root'}", "job")
    before = snapshot(outside)
    for operation in every_operation(hook):
        with pytest.raises(StateGateError, match="symbolic link"):
            operation()
    assert snapshot(outside) == before


@pytest.mark.parametrize("linked", ["lock", "history", "archive", "staged", "checkpoint", "deployment.json"])
def test_a_link_anywhere_in_the_job_root_is_refused_and_nothing_is_written_through_it(
        tmp_path: Path, outside: Path, linked: str) -> None:
    job = tmp_path / "root" / "job"
    make_state(job / "checkpoint")
    (job / "deployment.json").write_text(json.dumps({"sql": "v1", "deployed_at": "2026-01-01T00:00:00+00:00"}))
    if (job / linked).exists():
        os.rename(job / linked, tmp_path / "moved-away")
    target = outside / ("checkpoint" if linked == "checkpoint" else "deployment.json"
                        if linked == "deployment.json" else "history")
    (job / linked).symlink_to(target)
    hook = DeploymentHook(f"file://{tmp_path / 'root'}", "job")
    before, job_before = snapshot(outside), snapshot(job)
    refused = 0
    for operation in every_operation(hook):
        try:
            operation()
        except StateGateError as error:
            assert "symbolic link" in str(error)
            refused += 1
    assert refused >= 1
    assert snapshot(outside) == before, "nothing read or written through the link changed what it points at"
    def state(found: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in found.items() if k.split("/")[0] in ("checkpoint", "archive")}

    if linked in ("archive", "checkpoint"):
        assert state(snapshot(job)) == state(job_before), "the state was neither moved nor archived"


@pytest.mark.parametrize("source, target", [
    ("../../elsewhere/checkpoint", "archive/T1/checkpoint"),
    ("checkpoint", "../../elsewhere/checkpoint"),
    ("{outside}/checkpoint", "archive/T1/checkpoint"),
    ("checkpoint", "{outside}/checkpoint"),
    ("checkpoint", "archive/../../elsewhere"),
    ("history", "archive/T1/history"),
    ("checkpoint", "history/T1/checkpoint"),
])
@pytest.mark.parametrize("step", ["copying", "deleting"])
def test_an_edited_intent_record_never_moves_or_deletes_anything(
        tmp_path: Path, outside: Path, source: str, target: str, step: str) -> None:
    job = tmp_path / "root" / "job"
    make_state(job / "checkpoint")
    intent = {"source": source.format(outside=outside), "target": target.format(outside=outside), "step": step}
    (job / "archiving.json").write_text(json.dumps(intent))
    hook = DeploymentHook(f"file://{tmp_path / 'root'}", "job")
    before, job_before = snapshot(outside), snapshot(job)
    with pytest.raises(StateGateError, match="refusing to finish the move"):
        hook.archiver.finish()
    with pytest.raises(StateGateError, match="refusing to finish the move"):
        hook.archiver.archive("checkpoint", stamp="T2")
    assert snapshot(outside) == before and snapshot(job) == job_before


@pytest.mark.parametrize("text", ['{"source": "checkpoint"', "[]", '{"step": "deleting"}', "\x00\x01"])
def test_a_corrupted_intent_record_is_refused_by_name(tmp_path: Path, text: str) -> None:
    job = tmp_path / "root" / "job"
    make_state(job / "checkpoint")
    (job / "archiving.json").write_text(text)
    before = snapshot(job)
    with pytest.raises(StateGateError, match="archiving.json"):
        DeploymentHook(f"file://{tmp_path / 'root'}", "job").archiver.finish()
    assert snapshot(job) == before


@pytest.mark.parametrize("name, problem", [
    ("job\n", "must be letters"), ("job/x", "must be letters"), ("..", "must be letters"), ("", "must be letters"),
    (".hidden", "must be letters"), ("j" * 300, "at most 255"), ("é", "must be letters"),
])
def test_a_job_name_that_is_not_one_directory_is_refused_clearly(tmp_path: Path, name: str, problem: str) -> None:
    with pytest.raises(StateGateError, match=problem):
        DeploymentHook(f"file://{tmp_path}", name)
    assert list(tmp_path.iterdir()) == []


def test_a_job_name_of_255_bytes_works(tmp_path: Path) -> None:
    hook = DeploymentHook(f"file://{tmp_path}", "j" * 255)
    hook.records.write(DeploymentRecord("v1", "FIRST_DEPLOY", deployed_at="2026-01-01T00:00:00+00:00"))
    assert hook.records.read().sql == "v1"


@pytest.mark.parametrize("content, problem", [
    ('{"sql": "SELECT', "not valid JSON"),
    ('{"sequel": "SELECT 1"}', "not a deployment record"),
    ('["SELECT 1"]', "not a deployment record"),
    ('{"sql": 42}', "not a deployment record"),
    ("", "not valid JSON"),
])
def test_a_truncated_or_mistyped_record_is_a_clear_error_and_nothing_changes(
        tmp_path: Path, content: str, problem: str) -> None:
    job = tmp_path / "root" / "job"
    make_state(job / "checkpoint")
    (job / "deployment.json").write_text(content)
    hook = DeploymentHook(f"file://{tmp_path / 'root'}", "job")
    before = snapshot(job)
    with pytest.raises(StateGateError, match=problem):
        hook.records.read()
    with pytest.raises(StateGateError, match=problem):
        hook.records.write(DeploymentRecord("v2", "FULL", deployed_at="2026-01-02T00:00:00+00:00"))
    assert snapshot(job) == before


def test_a_huge_record_is_refused_without_reading_it(tmp_path: Path) -> None:
    job = tmp_path / "root" / "job"
    job.mkdir(parents=True)
    with open(job / "deployment.json", "wb") as record:
        record.truncate(MAX_RECORD_BYTES + 1)  # sparse: no disk is used, and it must not be read
    with pytest.raises(StateGateError, match="more than a record can be"):
        DeploymentHook(f"file://{tmp_path / 'root'}", "job").records.read()

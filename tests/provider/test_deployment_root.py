"""The deployment root: record and history, the redeploy lock, and archiving state safely."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.hooks.deployment import DeploymentHook, StateGateError


@pytest.fixture
def hook(tmp_path: Path) -> DeploymentHook:
    return DeploymentHook(f"file://{tmp_path / 'root'}", "job")


def make_state(path: Path) -> None:
    (path / "offsets").mkdir(parents=True)
    (path / "offsets" / "0").write_text("batch 0")
    (path / "metadata").write_text('{"id": "q"}')


def test_record_replaces_and_keeps_history(hook: DeploymentHook, tmp_path: Path) -> None:
    assert hook.records.read() is None
    hook.records.write(DeploymentRecord("v1", "FIRST_DEPLOY", deployed_at="2026-01-01T00:00:00+00:00"))
    hook.records.write(DeploymentRecord("v2", "FULL", deployed_at="2026-01-02T00:00:00+00:00"))
    assert hook.records.read().sql == "v2"
    assert [r.sql for r in hook.records.history()] == ["v1"]
    job = tmp_path / "root" / "job"
    assert sorted(p.name for p in job.iterdir()) == ["deployment.json", "history"], "no temp file left"


def test_lock_admits_one_redeploy(hook: DeploymentHook) -> None:
    hook.lock.acquire("run-1")
    hook.lock.acquire("run-1")  # the holder may re-enter (task retry)
    with pytest.raises(StateGateError, match="being redeployed by run .run-1."):
        hook.lock.acquire("run-2")
    assert not hook.lock.release("run-2")
    assert hook.lock.release("run-1")
    hook.lock.acquire("run-2")


def test_archive_moves_the_checkpoint_atomically(hook: DeploymentHook, tmp_path: Path) -> None:
    checkpoint = tmp_path / "root" / "job" / "checkpoint"
    make_state(checkpoint)
    inode = checkpoint.stat().st_ino
    archived = hook.archiver.archive("checkpoint", stamp="T1")
    assert Path(archived.path) == tmp_path / "root" / "job" / "archive" / "T1" / "checkpoint"
    assert Path(archived.path).stat().st_ino == inode, "renamed, not copied"
    assert (Path(archived.path) / "offsets" / "0").read_text() == "batch 0"
    assert not checkpoint.exists()
    assert hook.archiver.archive("checkpoint", stamp="T2") is None, "nothing left to archive"
    make_state(checkpoint)
    with pytest.raises(StateGateError, match="already exists"):
        hook.archiver.archive("checkpoint", stamp="T1")
    assert (checkpoint / "offsets" / "0").exists()


def test_archive_on_a_store_without_rename_copies_verifies_then_deletes() -> None:
    """fsspec's in-memory filesystem stands for an object store: no atomic directory rename."""
    import fsspec
    from airflow.sdk import ObjectStoragePath
    from airflow.sdk.io.store import attach

    attach("memory", fs=fsspec.filesystem("memory"))
    hook = DeploymentHook("memory://stategate-test", "job")
    source = ObjectStoragePath("memory://stategate-test/job/checkpoint")
    (source / "offsets").mkdir(parents=True, exist_ok=True)
    (source / "offsets" / "0").write_text("batch 0")
    (source / "metadata").write_text("{}")
    archived = hook.archiver.archive("checkpoint", stamp="T1")
    assert str(archived) == "memory://stategate-test/job/archive/T1/checkpoint"
    assert (archived / "offsets" / "0").read_text() == "batch 0"
    assert not source.exists()


@pytest.mark.parametrize("location, message", [
    ("", "empty path"),
    ("/", "empty path"),
    (".", "empty path"),
    ("../other-job/checkpoint", "'..' is not allowed"),
    ("checkpoint/../../other-job", "'..' is not allowed"),
    ("/etc", "outside the job root"),
    ("file:///tmp", "outside the job root"),
    ("archive/T1/checkpoint", "bookkeeping"),
    ("history", "bookkeeping"),
    ("archiving.json", "bookkeeping"),
])
def test_archive_refuses_paths_outside_the_job_state(hook: DeploymentHook, tmp_path: Path,
                                                      location: str, message: str) -> None:
    make_state(tmp_path / "root" / "job" / "checkpoint")
    with pytest.raises(StateGateError, match=message):
        hook.archiver.archive(location)
    assert (tmp_path / "root" / "job" / "checkpoint" / "offsets" / "0").exists()


def test_archive_refuses_symbolic_links(hook: DeploymentHook, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    make_state(elsewhere)
    (tmp_path / "root" / "job").mkdir(parents=True)
    os.symlink(elsewhere, tmp_path / "root" / "job" / "checkpoint")
    with pytest.raises(StateGateError, match="symbolic link"):
        hook.archiver.archive("checkpoint")
    assert (elsewhere / "offsets" / "0").exists()
    os.symlink(elsewhere, tmp_path / "root" / "job" / "linked")
    with pytest.raises(StateGateError, match="symbolic link"):
        hook.archiver.archive("linked/offsets")


def test_job_names_cannot_escape_the_root(tmp_path: Path) -> None:
    for name in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(StateGateError, match="job name"):
            DeploymentHook(f"file://{tmp_path}", name)


def test_spark_uri_names_the_same_place(tmp_path: Path) -> None:
    job = DeploymentHook(f"file://{tmp_path}", "job").job
    assert job.spark_uri(job.checkpoint) == f"{tmp_path}/job/checkpoint"
    split = DeploymentHook("s3://records/stategate", "job", checkpoint_root=f"file://{tmp_path}/state").job
    assert split.spark_uri(split.checkpoint) == f"{tmp_path}/state/job/checkpoint"
    assert split.spark_uri(split.record_path("deployment.json")) == "s3a://records/stategate/job/deployment.json"


def test_provider_is_discoverable() -> None:
    import subprocess
    import sys

    from stategate.provider.get_provider_info import get_provider_info

    info = get_provider_info()
    assert info["package-name"] == "airflow-provider-stategate"
    for group in ("operators", "hooks"):
        for module in info[group][0]["python-modules"]:
            __import__(module)
    listed = subprocess.run([sys.executable, "-m", "airflow", "providers", "list", "-o", "json"],
                            capture_output=True, text=True, timeout=120)
    providers = {p["package_name"]: p for p in json.loads(listed.stdout)}
    assert providers["airflow-provider-stategate"]["version"] == "0.1.0"

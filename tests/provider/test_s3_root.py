"""The deployment root on an S3 API (moto's server on 127.0.0.1, through an Airflow ``aws``
connection): record, history, staging, archive and the redeploy lock, with several processes."""

from __future__ import annotations

from datetime import timedelta

import fsspec
import pytest
from airflow.sdk import ObjectStoragePath
from airflow.sdk.io.store import attach
from fsspec.implementations.memory import MemoryFileSystem

from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.hooks.deployment import DeploymentHook, StateGateError
from tests.provider.conftest import S3_CONN
from tests.provider.test_concurrency import race_redeploys

ROUNDS = 3  # each lock step is a few HTTP requests: fewer rounds than on a local root, same races
STATE = {"metadata": '{"id": "q"}', "offsets/0": "batch 0", "offsets/1": "batch 1",
         "_stategate/job.sql": "SELECT 1", "state/0/0/1.delta": "x" * 50_000}


def write_state(checkpoint: ObjectStoragePath) -> None:
    for name, text in STATE.items():
        (checkpoint / name).parent.mkdir(parents=True, exist_ok=True)
        (checkpoint / name).write_text(text)


def test_record_history_staging_and_archive(s3_root: str) -> None:
    hook = DeploymentHook(s3_root, "job", S3_CONN)
    assert hook.records.read() is None and not hook.job.has_state()
    hook.records.write(DeploymentRecord("v1", "FIRST_DEPLOY", deployed_at="2026-01-01T00:00:00+00:00"))
    hook.records.write(DeploymentRecord("v2", "FULL", deployed_at="2026-01-02T00:00:00+00:00"))
    assert hook.records.read().sql == "v2" and [r.sql for r in hook.records.history()] == ["v1"]
    staged = hook.records.stage_sql("SELECT 2", "manual__2026-01-02T00:00:00+00:00")
    assert hook.job.spark_uri(staged).startswith("s3a://stategate/") and staged.read_text() == "SELECT 2"

    write_state(hook.job.checkpoint)
    assert hook.job.has_state()
    archived = hook.archiver.archive("checkpoint", stamp="T1")
    assert {name: (archived / name).read_text() for name in STATE} == STATE, "copied and verified"
    assert not hook.job.has_state() and not hook.archiver.intent_path.exists()
    assert hook.archiver.archive("checkpoint", stamp="T2") is None


def test_the_lock_admits_one_holder_across_gates(s3_root: str) -> None:
    first, second = (DeploymentHook(s3_root, "job", S3_CONN) for _ in range(2))
    first.lock.acquire("run-1")
    with pytest.raises(StateGateError, match="being redeployed by run .run-1."):
        second.lock.acquire("run-2", wait=0.5, poll=0.1)
    assert not second.lock.release("run-2") and first.lock.release("run-1")
    assert second.lock.acquire("run-2") is None and first.lock.holder()["owner"] == "run-2"
    assert first.lock.acquire("run-3", stale_after=timedelta(0))["owner"] == "run-2", "a stale lock is taken over"


def test_concurrent_redeploys_on_s3_take_turns(s3_root: str, spawn, tmp_path) -> None:
    """The local concurrency story on the S3 API: processes racing for the lock (one takes over a
    dead run's lock), readers never seeing a torn record."""
    race_redeploys(s3_root, spawn, tmp_path, S3_CONN, ROUNDS)


class IgnoresConditionalWrites(MemoryFileSystem):
    """A store that takes an exclusive create as a plain write, as S3-compatible servers without
    ``If-None-Match`` support do."""

    protocol = ("lax",)
    store: dict = {}
    pseudo_dirs = [""]

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).replace("lax://", "memory://", 1))

    def _open(self, path, mode="rb", *args, **kwargs):
        return super()._open(path, mode.replace("x", "w"), *args, **kwargs)


def test_a_store_without_exclusive_create_is_refused() -> None:
    fsspec.register_implementation("lax", IgnoresConditionalWrites, clobber=True)
    attach("lax", fs=IgnoresConditionalWrites())
    hook = DeploymentHook("lax://stategate", "job")
    with pytest.raises(StateGateError, match="cannot create an object exclusively .*refuses to run"):
        hook.lock.acquire("run-1")
    assert hook.lock.holder() is None
    assert not [p for p in hook.job.record_path("lock").iterdir() if p.name.startswith(".probe")], "the probe is removed"

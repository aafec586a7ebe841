"""Clearing state on an object store (copy, verify, delete), crashed at every single write.

The store is fsspec's in-memory filesystem (no directory rename, like S3 or GCS) with one change: it
dies (raises :class:`Crash`, which no ``except Exception`` catches) at its k-th write, copy or
delete. For every k the state must be usable where it was, or wholly archived, never half of
each; and the next archive call must finish (or undo) the interrupted one.
"""

from __future__ import annotations

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from stategate.provider.hooks.deployment import DeploymentHook

ORIGINAL = {
    "metadata": b'{"id": "9f1c"}',
    "offsets/0": b"v1\n{}\n{\"logOffset\": 0}",
    "offsets/1": b"v1\n{}\n{\"logOffset\": 1}",
    "commits/0": b"v1\n{}",
    "sources/0/0": b"v1\n{\"path\": \"bids-1.csv\"}",
    "state/0/0/1.delta": bytes(range(256)) * 40,
    "state/0/1/1.delta": bytes(reversed(range(256))) * 40,
    "_stategate/job.sql": b"SELECT a, SUM(b) FROM t GROUP BY a, TUMBLE(ts, INTERVAL '1' MINUTE)",
    "_stategate/signature.json": b"{}",
}
RECORD = "_stategate/job.sql"


class Crash(BaseException):
    """The process died here."""


class CrashingMemoryFS(MemoryFileSystem):
    protocol = ("crashmem",)
    store: dict = {}
    pseudo_dirs = [""]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.writes, self.crash_at = 0, None

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).replace("crashmem://", "memory://", 1))

    def _write(self) -> None:
        if self.crash_at is not None and self.writes == self.crash_at:
            raise Crash(f"crashed at write {self.writes}")
        self.writes += 1

    def _open(self, path, mode="rb", *args, **kwargs):
        if mode != "rb":
            self._write()
        return super()._open(path, mode, *args, **kwargs)

    def pipe_file(self, *args, **kwargs):
        self._write()
        return super().pipe_file(*args, **kwargs)

    def cp_file(self, *args, **kwargs):
        self._write()
        return super().cp_file(*args, **kwargs)

    def _rm(self, *args, **kwargs):
        self._write()
        return super()._rm(*args, **kwargs)

    def rmdir(self, *args, **kwargs):
        self._write()
        return super().rmdir(*args, **kwargs)


@pytest.fixture
def store() -> CrashingMemoryFS:
    import fsspec
    from airflow.sdk.io.store import attach

    fsspec.register_implementation("crashmem", CrashingMemoryFS, clobber=True)
    fs = CrashingMemoryFS()
    attach("crashmem", fs=fs)
    return fs


def reset(fs: CrashingMemoryFS) -> None:
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]
    for name, data in ORIGINAL.items():
        fs.pipe_file(f"/root/job/checkpoint/{name}", data)
    fs.writes, fs.crash_at = 0, None


def files(fs: CrashingMemoryFS, folder: str) -> dict[str, bytes]:
    prefix = folder.rstrip("/") + "/"
    return {path[len(prefix):]: fs.cat_file(path) for path in fs.find(folder)} if fs.exists(folder) else {}


def archives(fs: CrashingMemoryFS) -> dict[str, dict[str, bytes]]:
    """Every archived checkpoint that holds any file, by stamp."""
    found = {}
    for stamp in fs.ls("/root/job/archive", detail=False) if fs.exists("/root/job/archive") else []:
        content = files(fs, f"{stamp}/checkpoint")
        if content:
            found[stamp.rsplit("/", 1)[-1]] = content
    return found


def test_a_crash_at_any_write_leaves_the_state_usable_or_wholly_archived(store: CrashingMemoryFS) -> None:
    hook = DeploymentHook("crashmem:///root", "job")
    reset(store)
    assert str(hook.archiver.archive("checkpoint", stamp="T1")) == "crashmem:///root/job/archive/T1/checkpoint"
    assert archives(store) == {"T1": ORIGINAL} and not files(store, "/root/job/checkpoint")
    writes = store.writes
    assert writes > len(ORIGINAL) * 2, "the move copies and deletes every file"

    for crash_at in range(writes):
        reset(store)
        store.crash_at = crash_at
        with pytest.raises(Crash):
            hook.archiver.archive("checkpoint", stamp="T1")
        store.crash_at = None
        left, archived = files(store, "/root/job/checkpoint"), archives(store)
        usable = left == ORIGINAL
        wholly_archived = archived.get("T1") == ORIGINAL and RECORD not in left
        assert usable or wholly_archived, f"crash at write {crash_at}: half of each"

        resumed = DeploymentHook("crashmem:///root", "job").archiver.archive("checkpoint", stamp="T2")
        assert resumed is not None and archives(store) == {resumed.parent.name: ORIGINAL}, crash_at
        assert not files(store, "/root/job/checkpoint") and not store.exists("/root/job/archiving.json")

"""Clearing state on an object store (copy, verify, delete), crashed at every single write.

Two stores without directory rename: fsspec's in-memory filesystem, and S3 (moto's server on
127.0.0.1 through the Airflow ``aws`` connection). Each is made mortal: its k-th write (a PUT, copy
or delete; on S3 every request that changes the bucket) raises :class:`Crash`, and so does every
write after it, as nothing more is written by a dead process. For every k the state must be usable
where it was, or wholly archived, never half of each; and the next archive call must finish (or
undo) the interrupted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from airflow.sdk.io.store import attach
from fsspec import AbstractFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from stategate.provider.hooks.deployment import DeploymentHook
from tests.provider.conftest import S3_CONN

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
#: The S3 requests that change a bucket.
S3_WRITES = frozenset({"put_object", "copy_object", "delete_object", "delete_objects", "create_multipart_upload",
                       "upload_part", "upload_part_copy", "complete_multipart_upload"})


class Crash(Exception):
    """The process died here. (An ``Exception``: fsspec hands only those back from its event loop.
    Nothing on the archiver's path catches it.)"""


@dataclass
class Mortality:
    """Counts a store's writes; from the ``crash_at``-th on, each one raises :class:`Crash`."""

    writes: int = 0
    crash_at: int | None = None

    def write(self) -> None:
        if self.crash_at is not None and self.writes >= self.crash_at:
            raise Crash(f"crashed at write {self.crash_at}")
        self.writes += 1


class CrashingMemoryFS(MemoryFileSystem):
    protocol = ("crashmem",)
    store: dict = {}
    pseudo_dirs = [""]
    mortality = Mortality()

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).replace("crashmem://", "memory://", 1))

    def _open(self, path, mode="rb", *args, **kwargs):
        if mode != "rb":
            self.mortality.write()
        return super()._open(path, mode, *args, **kwargs)

    def pipe_file(self, *args, **kwargs):
        self.mortality.write()
        return super().pipe_file(*args, **kwargs)

    def cp_file(self, *args, **kwargs):
        self.mortality.write()
        return super().cp_file(*args, **kwargs)

    def _rm(self, *args, **kwargs):
        self.mortality.write()
        return super()._rm(*args, **kwargs)

    def rmdir(self, *args, **kwargs):
        self.mortality.write()
        return super().rmdir(*args, **kwargs)


@dataclass
class Store:
    """A mortal store holding one job root: ``url`` and ``conn_id`` for the hook, ``fs`` and ``job``
    (the job directory as ``fs`` names it) for looking at what is really there."""

    url: str
    conn_id: str | None
    fs: AbstractFileSystem
    job: str
    mortality: Mortality = field(default_factory=Mortality)

    def hook(self) -> DeploymentHook:
        return DeploymentHook(self.url, "job", self.conn_id)

    def reset(self) -> None:
        """Only the original checkpoint, and a store that lives."""
        self.mortality.crash_at = None
        self.fs.invalidate_cache()
        if self.fs.exists(self.job):
            self.fs.rm(self.job, recursive=True)
        for name, data in ORIGINAL.items():
            self.fs.pipe_file(f"{self.job}/checkpoint/{name}", data)
        self.mortality.writes = 0

    def files(self, folder: str) -> dict[str, bytes]:
        folder = f"{self.job}/{folder}"
        self.fs.invalidate_cache()
        return {path[len(folder) + 1:]: self.fs.cat_file(path) for path in self.fs.find(folder)}

    def archives(self) -> dict[str, dict[str, bytes]]:
        """Every archived checkpoint that holds any file, by stamp."""
        self.fs.invalidate_cache()
        stamps = self.fs.ls(f"{self.job}/archive", detail=False) if self.fs.exists(f"{self.job}/archive") else []
        found = {name: self.files(f"archive/{name}/checkpoint") for name in (s.rsplit("/", 1)[-1] for s in stamps)}
        return {name: content for name, content in found.items() if content}

    def intent_left(self) -> bool:
        self.fs.invalidate_cache()
        return self.fs.exists(f"{self.job}/archiving.json")


@pytest.fixture(params=["memory", "s3"])
def store(request, monkeypatch) -> Store:
    if request.param == "memory":
        import fsspec

        fsspec.register_implementation("crashmem", CrashingMemoryFS, clobber=True)
        fs = CrashingMemoryFS()
        fs.store.clear()
        fs.pseudo_dirs[:] = [""]
        attach("crashmem", fs=fs)
        return Store("crashmem:///root", None, fs, "/root/job", CrashingMemoryFS.mortality)
    s3_root = request.getfixturevalue("s3_root")
    fs = attach("s3", conn_id=S3_CONN).fs  # the very filesystem every path with this connection uses
    mortality, call_s3 = Mortality(), fs._call_s3

    async def mortal_call_s3(method, *args, **kwargs):
        if method in S3_WRITES:
            mortality.write()
        return await call_s3(method, *args, **kwargs)

    monkeypatch.setattr(fs, "_call_s3", mortal_call_s3)
    return Store(s3_root, S3_CONN, fs, f"{s3_root.removeprefix('s3://')}/job", mortality)


def test_a_crash_at_any_write_leaves_the_state_usable_or_wholly_archived(store: Store) -> None:
    hook = store.hook()
    store.reset()
    assert hook.archiver.archive("checkpoint", stamp="T1").path == f"{store.job}/archive/T1/checkpoint"
    assert store.archives() == {"T1": ORIGINAL} and not store.files("checkpoint")
    writes = store.mortality.writes
    assert writes > len(ORIGINAL), "the move copies and deletes every file"

    for crash_at in range(writes):
        store.reset()
        store.mortality.crash_at = crash_at
        with pytest.raises(Crash):
            hook.archiver.archive("checkpoint", stamp="T1")
        store.mortality.crash_at = None
        left, archived = store.files("checkpoint"), store.archives()
        usable = left == ORIGINAL
        wholly_archived = archived.get("T1") == ORIGINAL and RECORD not in left
        assert usable or wholly_archived, f"crash at write {crash_at}: half of each"

        resumed = store.hook().archiver.archive("checkpoint", stamp="T2")
        assert resumed is not None and store.archives() == {resumed.parent.name: ORIGINAL}, crash_at
        assert not store.files("checkpoint") and not store.intent_left()

"""One job's deployment root: where its state and its deployment history live together.

::

    <root>/<job>/checkpoint/        Spark's checkpoint (with the job's own _stategate/ record)
    <root>/<job>/deployment.json    the last deployed version: SQL, state signature, verdict, time, run
    <root>/<job>/history/           earlier deployment.json files
    <root>/<job>/archive/<ts>/      checkpoints cleared by an INCOMPATIBLE (or approved) redeploy
    <root>/<job>/staged/            the SQL a DAG run analysed, handed to spark-submit unchanged
    <root>/<job>/lock               one redeploy at a time (who holds it, since when)
    <root>/<job>/archiving.json     a move to archive/ under way (to finish it after a crash)

With a separate checkpoint root (records on S3, checkpoints where Spark reads them, say HDFS),
``checkpoint/``, ``archive/``, ``staged/`` and ``archiving.json`` live under
``<checkpoint root>/<job>/`` instead: everything Spark reads, and every move of state, stays on
the state's own store.

Keeping the record beside the state (not in Airflow's database) means the two cannot drift apart:
whoever holds the checkpoint holds the SQL it was built by. Access goes through Airflow's
``ObjectStoragePath``, so ``file://``, ``s3://`` and ``gs://`` roots work alike.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

from airflow.sdk import ObjectStoragePath

_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: How Spark spells the same store: Hadoop's S3 connector is ``s3a``.
_SPARK_SCHEMES = {"s3": "s3a", "s3a": "s3a", "gs": "gs", "gcs": "gs", "abfs": "abfs", "hdfs": "hdfs"}
CHECKPOINT, RECORD, HISTORY, ARCHIVE, STAGED, LOCK, INTENT = (
    "checkpoint", "deployment.json", "history", "archive", "staged", "lock", "archiving.json")
#: What the job root keeps for itself: never state, never archived.
BOOKKEEPING = (ARCHIVE, HISTORY, STAGED, RECORD, LOCK, ".lock.guard", INTENT)


class StateGateError(RuntimeError):
    """A deployment-root operation was refused; nothing was changed."""


@dataclass(frozen=True)
class JobRoot:
    """The paths of one job under a root of all jobs.

    :param root: the root of all jobs (``file:///srv/stategate``, ``s3://bucket/stategate``, ...)
    :param job_name: the job, a directory under ``root``
    :param conn_id: the Airflow connection that authenticates ``root`` (object stores)
    :param checkpoint_root: where checkpoints live when not beside the records (for example records
        on S3 and checkpoints on HDFS); ``<checkpoint_root>/<job>/checkpoint``
    """

    root: str
    job_name: str
    conn_id: str | None = None
    checkpoint_root: str | None = None

    def __post_init__(self) -> None:
        if not _JOB_NAME.match(self.job_name or ""):
            raise StateGateError(f"job name {self.job_name!r} must be letters, digits, '_', '.' or '-'")

    @property
    def path(self) -> ObjectStoragePath:
        return ObjectStoragePath(self.root, conn_id=self.conn_id) / self.job_name

    @property
    def state_home(self) -> ObjectStoragePath:
        """Where the checkpoint, its archives and the staged SQL live."""
        if self.checkpoint_root is None:
            return self.path
        return ObjectStoragePath(self.checkpoint_root, conn_id=self.conn_id) / self.job_name

    @property
    def checkpoint(self) -> ObjectStoragePath:
        return self.state_home / CHECKPOINT

    def __truediv__(self, name: str) -> ObjectStoragePath:
        return self.path / name

    @property
    def is_local(self) -> bool:
        return _is_local(self.path)

    @property
    def state_is_local(self) -> bool:
        return _is_local(self.state_home)

    def spark_uri(self, path: ObjectStoragePath) -> str:
        """The same location as Spark (and spark-submit) name it."""
        scheme = path.protocol if isinstance(path.protocol, str) else path.protocol[0]
        if scheme in ("", "file", "local"):
            return path.path
        return f"{_SPARK_SCHEMES.get(scheme, scheme)}://{path.path}"

    def has_state(self, path: ObjectStoragePath | None = None) -> bool:
        path = fresh(path or self.checkpoint)
        return path.exists() and any(True for _ in path.iterdir())

    def inside(self, location: str) -> ObjectStoragePath:
        """``location`` (relative to the job root, or a full URL) if it is safely inside the job root.

        Refused: empty paths, ``..`` components, anything outside the job root, the job root itself
        and its bookkeeping, and symbolic links on the way (a link could point at someone else's
        state)."""
        if not location.strip().strip("/."):
            raise StateGateError(f"refusing {location!r}: an empty path, '/' or '.' names no state")
        if ".." in re.split(r"[\\/]+", location):
            raise StateGateError(f"refusing {location!r}: '..' is not allowed in a state path")
        job_root = self.state_home
        path = ObjectStoragePath(location, conn_id=self.conn_id) if "://" in location or location.startswith("/") \
            else job_root / location
        root = job_root.path.rstrip("/")
        target = path.path.rstrip("/")
        if not path.samestore(job_root) or not target.startswith(root + "/"):
            raise StateGateError(f"refusing {location!r}: it is outside the job root {job_root}")
        relative = target[len(root) + 1:]
        if relative.split("/")[0] in BOOKKEEPING:
            raise StateGateError(f"refusing {location!r}: that is the job root's own bookkeeping")
        if self.state_is_local:
            current = root
            for part in relative.split("/"):
                current = f"{current}/{part}"
                if os.path.islink(current):
                    raise StateGateError(f"refusing {location!r}: {current} is a symbolic link")
        return path


def fresh(path: ObjectStoragePath) -> ObjectStoragePath:
    """``path``, with what its store cached of it and its parents forgotten.

    Object-store filesystems (s3fs, gcsfs) cache directory listings per process and never learn
    of another process's writes, so ``exists()`` and ``iterdir()`` could answer from before another
    gate wrote the lock or the record. Everything that decides on what other processes wrote reads
    through this. (Without a connection, Airflow's path answers ``exists()`` and ``iterdir()`` with
    the filesystem of the path it wraps, not with ``path.fs``: both forget.)"""
    for fs in (path.fs, getattr(path, "__wrapped__", path).fs):
        fs.invalidate_cache(path.path)
    return path


def read_text(path: ObjectStoragePath) -> str:
    """The whole object in one read. (A file object on S3 reads in ranges pinned to the first
    ETag and fails if a writer replaces the object meanwhile; one GET sees the old or the new.)"""
    return path.fs.cat_file(path.path).decode("utf-8")


def _is_local(path: ObjectStoragePath) -> bool:
    return path.protocol in ("file", "local", "")


def replace_text(path: ObjectStoragePath, text: str) -> None:
    """Write ``text`` beside ``path`` and move it over ``path``: a reader sees the old or the new
    text, never a torn one (on object stores a single PUT is atomic already)."""
    staged = path.parent / f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp"
    staged.write_text(text)
    staged.replace(path)

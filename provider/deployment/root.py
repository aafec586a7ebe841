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

import errno
import os
import re
import socket
import stat
from dataclasses import dataclass

from airflow.sdk import ObjectStoragePath

_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: The longest path component (file or directory name) filesystems take, in bytes (NAME_MAX).
NAME_BYTES = 255
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
        if not isinstance(self.job_name, str) or not _JOB_NAME.fullmatch(self.job_name):
            raise StateGateError(f"job name {self.job_name!r} must be letters, digits, '_', '.' or '-', "
                                 "starting with a letter or digit")
        if len(self.job_name.encode()) > NAME_BYTES:
            raise StateGateError(f"job name {self.job_name[:40]}… is {len(self.job_name.encode())} bytes long; "
                                 f"a directory name holds at most {NAME_BYTES}")

    # -------------------------------------------------------------- the only way to a path in the root
    def record_path(self, *parts: str) -> ObjectStoragePath:
        """``<root>/<job>/<parts>``: the job's records (deployment.json, history/, lock/)."""
        return self._confined(self.root, parts)

    def state_path(self, *parts: str) -> ObjectStoragePath:
        """``<state root>/<job>/<parts>``: the checkpoint, its archives, staged SQL, the intent."""
        return self._confined(self.checkpoint_root or self.root, parts)

    def _confined(self, base: str, parts: tuple[str, ...]) -> ObjectStoragePath:
        """A path under the job, refused unless every part is a plain name and, on a local store,
        no component below the root of all jobs is a symbolic link (a link could lead to another
        job's state, or anywhere). Refusing changes nothing."""
        for part in parts:
            if not part or part in (".", "..") or "/" in part or "\\" in part or "\x00" in part:
                raise StateGateError(f"refusing {part!r}: not a plain name inside the job root; nothing was changed")
            if len(part.encode()) > NAME_BYTES:
                raise StateGateError(f"refusing {part[:40]}…: longer than {NAME_BYTES} bytes; nothing was changed")
        top = ObjectStoragePath(base, conn_id=self.conn_id)
        path = top / self.job_name
        for part in parts:
            path = path / part
        refuse_links(top, path)
        return path

    @property
    def path(self) -> ObjectStoragePath:
        return self.record_path()

    @property
    def state_home(self) -> ObjectStoragePath:
        """Where the checkpoint, its archives and the staged SQL live."""
        return self.state_path()

    @property
    def checkpoint(self) -> ObjectStoragePath:
        return self.state_path(CHECKPOINT)

    @property
    def is_local(self) -> bool:
        return _is_local(ObjectStoragePath(self.root, conn_id=self.conn_id))

    @property
    def state_is_local(self) -> bool:
        return _is_local(ObjectStoragePath(self.checkpoint_root or self.root, conn_id=self.conn_id))

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
        return self.state_path(*relative.split("/"))


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


def refuse_links(top: ObjectStoragePath, path: ObjectStoragePath) -> None:
    """Refuse ``path`` if, on a local store, a component of it below ``top`` (the root of all jobs,
    which an operator may well have linked elsewhere) is a symbolic link. Object stores have none."""
    if not _is_local(path):
        return
    root, target = top.path.rstrip("/"), path.path.rstrip("/")
    if target != root and not target.startswith(root + "/"):
        raise StateGateError(f"refusing {path}: it is outside the root {top}; nothing was changed")
    current = root
    for part in target[len(root) + 1:].split("/") if target != root else ():
        current = f"{current}/{part}"
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return  # nothing below exists yet: no link to follow
        if stat.S_ISLNK(mode):
            raise StateGateError(f"refusing {path}: {current} is a symbolic link, and stategate reads and writes "
                                 "only inside the job root; nothing was changed")


def read_text(path: ObjectStoragePath) -> str:
    """The whole object in one read. (A file object on S3 reads in ranges pinned to the first
    ETag and fails if a writer replaces the object meanwhile; one GET sees the old or the new.)
    A local file is opened without following a link, should one appear after the path was checked."""
    if not _is_local(path):
        return path.fs.cat_file(path.path).decode("utf-8")
    try:
        handle = os.open(path.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise StateGateError(f"refusing {path}: it is a symbolic link; nothing was changed") from None
        raise
    with os.fdopen(handle, "rb") as file:
        return file.read().decode("utf-8")


def _is_local(path: ObjectStoragePath) -> bool:
    return path.protocol in ("file", "local", "")


def replace_text(path: ObjectStoragePath, text: str) -> None:
    """Write ``text`` beside ``path`` and move it over ``path``: a reader sees the old or the new
    text, never a torn one (on object stores a single PUT is atomic already)."""
    staged = path.parent / f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp"
    staged.write_text(text)
    staged.replace(path)

"""The per-job deployment root: where a job's state and its deployment history live together.

::

    <root>/<job>/checkpoint/        Spark's checkpoint (with the job's own _stategate/ record)
    <root>/<job>/deployment.json    the last deployed version: SQL, state signature, verdict, time, run
    <root>/<job>/history/           earlier deployment.json files
    <root>/<job>/archive/<ts>/      checkpoints cleared by an INCOMPATIBLE (or approved) redeploy
    <root>/<job>/staged/            the SQL a DAG run analysed, handed to spark-submit unchanged
    <root>/<job>/lock               one redeploy at a time

Keeping the record beside the state (not in Airflow's database) means the two cannot drift apart:
whoever holds the checkpoint holds the SQL it was built by. Access goes through Airflow's
``ObjectStoragePath``, so ``file://``, ``s3://`` and ``gs://`` roots work alike.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import suppress
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import BaseHook, ObjectStoragePath

_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: How Spark spells the same store: Hadoop's S3 connector is ``s3a``.
_SPARK_SCHEMES = {"s3": "s3a", "s3a": "s3a", "gs": "gs", "gcs": "gs", "abfs": "abfs", "hdfs": "hdfs"}


class StateGateError(RuntimeError):
    """A deployment-root operation was refused; nothing was changed."""


class DeploymentHook(BaseHook):
    """Reads and writes one job's deployment root.

    :param root: the root of all jobs (``file:///srv/stategate``, ``s3://bucket/stategate``, ...)
    :param job_name: the job, a directory under ``root``
    :param conn_id: the Airflow connection that authenticates ``root`` (object stores)
    """

    conn_name_attr = "conn_id"
    hook_name = "stategate deployment root"

    def __init__(self, root: str, job_name: str, conn_id: str | None = None) -> None:
        super().__init__()
        if not _JOB_NAME.match(job_name or ""):
            raise StateGateError(f"job name {job_name!r} must be letters, digits, '_', '.' or '-'")
        self.conn_id = conn_id
        self.root = ObjectStoragePath(root, conn_id=conn_id)
        self.job_name = job_name

    # ------------------------------------------------------------------ layout
    @property
    def job_root(self) -> ObjectStoragePath:
        return self.root / self.job_name

    @property
    def checkpoint(self) -> ObjectStoragePath:
        return self.job_root / "checkpoint"

    @property
    def record_path(self) -> ObjectStoragePath:
        return self.job_root / "deployment.json"

    def spark_uri(self, path: ObjectStoragePath) -> str:
        """The same location as Spark (and spark-submit) name it."""
        scheme = path.protocol if isinstance(path.protocol, str) else path.protocol[0]
        if scheme in ("", "file", "local"):
            return path.path
        return f"{_SPARK_SCHEMES.get(scheme, scheme)}://{path.path}"

    # ------------------------------------------------------------------ record
    def read_record(self) -> dict[str, Any] | None:
        if not self.record_path.exists():
            return None
        return json.loads(self.record_path.read_text())

    def write_record(self, record: dict[str, Any]) -> None:
        """Make ``record`` the deployed version; the previous one moves to ``history/``.

        The new file is written beside the old one and renamed over it, so a reader sees either
        the old or the new record, never a torn one."""
        self.job_root.mkdir(parents=True, exist_ok=True)
        previous = self.read_record()
        if previous is not None:
            stamp = _stamp(previous.get("deployed_at"))
            history = self.job_root / "history" / f"{stamp}.json"
            history.parent.mkdir(parents=True, exist_ok=True)
            history.write_text(json.dumps(previous, indent=2))
        staged = self.job_root / f".deployment.json.{os.getpid()}.tmp"
        staged.write_text(json.dumps(record, indent=2))
        staged.replace(self.record_path)

    def history(self) -> list[dict[str, Any]]:
        folder = self.job_root / "history"
        if not folder.exists():
            return []
        return [json.loads(p.read_text()) for p in sorted(folder.iterdir(), key=lambda p: p.name)]

    def stage_sql(self, sql: str, run_id: str) -> ObjectStoragePath:
        """Store the SQL this run analysed: spark-submit runs exactly that text, not a newer file."""
        path = self.job_root / "staged" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', run_id)}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql)
        return path

    # ------------------------------------------------------------------ lock
    def acquire_lock(self, owner: str) -> None:
        """Refuse a second redeploy of the same job while one is under way."""
        self.job_root.mkdir(parents=True, exist_ok=True)
        lock = self.job_root / "lock"
        holder = self.lock_holder()
        if holder is not None and holder.get("owner") != owner:
            raise StateGateError(
                f"job {self.job_name} is being redeployed by {holder.get('owner')} since "
                f"{holder.get('since')}; if that run is gone, delete {lock}")
        if holder is None and lock.protocol in ("file", "local", ""):
            # Local roots: O_EXCL makes the check-and-create atomic between two racing runs.
            try:
                fd = os.open(lock.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                raise StateGateError(f"job {self.job_name} was locked by another run just now") from None
            os.close(fd)
        lock.write_text(json.dumps({"owner": owner, "since": datetime.now(timezone.utc).isoformat()}))

    def lock_holder(self) -> dict[str, Any] | None:
        lock = self.job_root / "lock"
        if not lock.exists():
            return None
        with suppress(ValueError):
            return json.loads(lock.read_text() or "{}") or {"owner": "?"}
        return {"owner": "?"}

    def release_lock(self, owner: str) -> bool:
        holder = self.lock_holder()
        if holder is None or holder.get("owner") != owner:
            return False
        (self.job_root / "lock").unlink()
        return True

    # ------------------------------------------------------------------ state
    def has_state(self, path: ObjectStoragePath | None = None) -> bool:
        path = path or self.checkpoint
        return path.exists() and any(True for _ in path.iterdir())

    def inside(self, location: str) -> ObjectStoragePath:
        """``location`` (relative to the job root, or a full URL) if it is safely inside the job root.

        Refused: ``..`` components, anything outside the job root, the job root itself and its
        bookkeeping, and symbolic links on the way (a link could point at someone else's state)."""
        if ".." in re.split(r"[\\/]+", location):
            raise StateGateError(f"refusing {location!r}: '..' is not allowed in a state path")
        path = ObjectStoragePath(location, conn_id=self.conn_id) if "://" in location or location.startswith("/") \
            else self.job_root / location
        root = self.job_root.path.rstrip("/")
        target = path.path.rstrip("/")
        if not path.samestore(self.job_root) or not target.startswith(root + "/"):
            raise StateGateError(f"refusing {location!r}: it is outside the job root {self.job_root}")
        relative = target[len(root) + 1:]
        if relative.split("/")[0] in ("archive", "history", "staged", "deployment.json", "lock"):
            raise StateGateError(f"refusing {location!r}: that is the job root's own bookkeeping")
        if path.protocol in ("file", "local", ""):
            current = root
            for part in relative.split("/"):
                current = f"{current}/{part}"
                if os.path.islink(current):
                    raise StateGateError(f"refusing {location!r}: {current} is a symbolic link")
        return path

    def archive_state(self, location: str = "checkpoint", stamp: str | None = None) -> ObjectStoragePath | None:
        """Move the state at ``location`` to ``archive/<stamp>/``; None when there is none to move.

        A rename where the store allows it (one atomic step on a local filesystem); elsewhere a
        copy, verified file by file against the source, and only then the source's deletion."""
        source = self.inside(location)
        if not self.has_state(source):
            return None
        stamp = stamp or _stamp(None)
        target = self.job_root / "archive" / stamp / source.name
        if target.exists():
            raise StateGateError(f"refusing to archive over {target}: it already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.protocol in ("file", "local", ""):
            os.rename(source.path, target.path)
            return target
        source.copy(target, recursive=True)
        missing = _inventory(source).items() - _inventory(target).items()
        if missing:
            raise StateGateError(f"archive copy of {source} is incomplete ({len(missing)} files differ); "
                                 "the source was kept")
        source.rmdir(recursive=True)
        return target


def _inventory(path: ObjectStoragePath) -> dict[str, int]:
    base = len(path.path.rstrip("/")) + 1
    return {p.path[base:]: p.stat().st_size for p in path.rglob("*") if p.is_file()}


def _stamp(iso: str | None) -> str:
    when = datetime.fromisoformat(iso) if iso else datetime.now(timezone.utc)
    return when.strftime("%Y%m%dT%H%M%S.%fZ")

"""The per-job deployment root: where a job's state and its deployment history live together.

::

    <root>/<job>/checkpoint/        Spark's checkpoint (with the job's own _stategate/ record)
    <root>/<job>/deployment.json    the last deployed version: SQL, state signature, verdict, time, run
    <root>/<job>/history/           earlier deployment.json files
    <root>/<job>/archive/<ts>/      checkpoints cleared by an INCOMPATIBLE (or approved) redeploy
    <root>/<job>/staged/            the SQL a DAG run analysed, handed to spark-submit unchanged
    <root>/<job>/lock               one redeploy at a time (who holds it, since when)
    <root>/<job>/archiving.json     a move to archive/ under way (to finish it after a crash)

Keeping the record beside the state (not in Airflow's database) means the two cannot drift apart:
whoever holds the checkpoint holds the SQL it was built by. Access goes through Airflow's
``ObjectStoragePath``, so ``file://``, ``s3://`` and ``gs://`` roots work alike.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import socket
import time
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

from airflow.sdk import BaseHook, ObjectStoragePath

from stategate.analyzer.layout import watermark_of_offset_log
from stategate.spark_jobs import RECORD_DIR, query_dir_name

_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: How Spark spells the same store: Hadoop's S3 connector is ``s3a``.
_SPARK_SCHEMES = {"s3": "s3a", "s3a": "s3a", "gs": "gs", "gcs": "gs", "abfs": "abfs", "hdfs": "hdfs"}


#: What the job root keeps for itself: never state, never archived.
BOOKKEEPING = ("archive", "history", "staged", "deployment.json", "lock", ".lock.guard", "archiving.json")


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

        Each file is written beside its target and renamed over it, so a reader (or a crash) sees
        the old or the new record, never a torn one."""
        self.job_root.mkdir(parents=True, exist_ok=True)
        previous = self.read_record()
        if previous is not None:
            stamp = _stamp(previous.get("deployed_at"))
            history = self.job_root / "history" / f"{stamp}.json"
            history.parent.mkdir(parents=True, exist_ok=True)
            _replace_text(history, json.dumps(previous, indent=2))
        _replace_text(self.record_path, json.dumps(record, indent=2))

    def state_signature(self) -> dict[str, Any] | None:
        """The signature the Spark job recorded beside its state (with the slot of each aggregate):
        the authority on how the checkpoint is laid out."""
        path = self.checkpoint / RECORD_DIR / "signature.json"
        if not path.exists():
            return None
        return json.loads(path.read_text())

    def watermarks(self, pipelines: list[str]) -> dict[str, int | None]:
        """Each pipeline's watermark as its last planned batch left it (Spark's offset log): it
        tells which retired slots of the layout no open window can read any more."""
        found: dict[str, int | None] = {}
        for pipeline in pipelines:
            offsets = self.checkpoint / query_dir_name(pipeline) / "offsets"
            batches = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()] if offsets.exists() else []
            found[pipeline] = watermark_of_offset_log((offsets / str(max(batches))).read_text()) if batches else None
        return found

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
    @property
    def lock_path(self) -> ObjectStoragePath:
        return self.job_root / "lock"

    def acquire_lock(
        self,
        owner: str,
        *,
        dag_id: str | None = None,
        wait: float = 0,
        stale_after: timedelta | None = None,
        holder_finished: Callable[[dict[str, Any]], bool] | None = None,
        poll: float = 1.0,
    ) -> dict[str, Any] | None:
        """Take the job's redeploy lock for ``owner`` (a DAG run), waiting up to ``wait`` seconds
        while another run holds it. The holder may take it again (a retried task).

        A lock is stale, and taken over, when ``holder_finished(holder)`` says the holding run has
        ended (its teardown never ran: a killed worker, a run marked failed by hand), or when it is
        older than ``stale_after``. Returns the stale holder taken over, if any.

        On a local root the check and the write happen under an ``flock`` of ``.lock.guard``: two
        racing gates, in any processes, cannot both win. Elsewhere the lock is created with an
        exclusive create where the store supports it (fsspec ``"xb"``), check-then-write if not."""
        deadline = time.monotonic() + wait
        while True:
            with self._lock_guard():
                holder = self.lock_holder()
                stale = holder is not None and holder.get("owner") != owner and self._is_stale(
                    holder, stale_after, holder_finished)
                if holder is None or holder.get("owner") == owner or stale:
                    self._write_lock(owner, dag_id, exclusive=holder is None)
                    return holder if stale else None
            if time.monotonic() >= deadline:
                waited = f" after waiting {wait:.0f} s" if wait else ""
                raise StateGateError(
                    f"job {self.job_name} is being redeployed by run {holder.get('owner')!r}"
                    f"{' of DAG ' + repr(holder['dag_id']) if holder.get('dag_id') else ''} since "
                    f"{holder.get('since', '?')}{waited}. Try again when it has finished; if that run is "
                    f"gone, delete {self.lock_path}")
            time.sleep(min(poll, max(deadline - time.monotonic(), 0.01)))

    def lock_holder(self) -> dict[str, Any] | None:
        try:
            text = self.lock_path.read_text()
        except FileNotFoundError:
            return None
        with suppress(ValueError):
            holder = json.loads(text)
            if isinstance(holder, dict) and "owner" in holder:
                return holder
        return {"owner": "?", "since": "?"}  # unreadable: held by someone, never silently taken

    def release_lock(self, owner: str) -> bool:
        with self._lock_guard():
            holder = self.lock_holder()
            if holder is None or holder.get("owner") != owner:
                return False
            self.lock_path.unlink()
            return True

    def _is_stale(self, holder: dict[str, Any], stale_after: timedelta | None,
                  holder_finished: Callable[[dict[str, Any]], bool] | None) -> bool:
        if holder_finished is not None and holder.get("owner") != "?" and holder_finished(holder):
            return True
        if stale_after is None:
            return False
        with suppress(ValueError, TypeError):
            return datetime.now(timezone.utc) - datetime.fromisoformat(holder["since"]) > stale_after
        modified = self.lock_path.stat().st_mtime  # unreadable lock: judge by its file's age
        return time.time() - modified > stale_after.total_seconds()

    def _write_lock(self, owner: str, dag_id: str | None, exclusive: bool) -> None:
        self.job_root.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"owner": owner, "dag_id": dag_id, "host": socket.gethostname(),
                           "pid": os.getpid(), "since": datetime.now(timezone.utc).isoformat()})
        if self._is_local:
            _replace_text(self.lock_path, text)  # the guard's flock already excludes the others
            return
        try:
            with self.lock_path.open("xb" if exclusive else "wb") as handle:
                handle.write(text.encode())
        except FileExistsError:
            raise StateGateError(f"job {self.job_name} was locked by another run just now") from None

    @contextmanager
    def _lock_guard(self) -> Iterator[None]:
        if not self._is_local:
            yield
            return
        self.job_root.mkdir(parents=True, exist_ok=True)
        with open(os.path.join(self.job_root.path, ".lock.guard"), "a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)  # released by the kernel if this process dies
            try:
                yield
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)

    @property
    def _is_local(self) -> bool:
        return self.job_root.protocol in ("file", "local", "")

    # ------------------------------------------------------------------ state
    def has_state(self, path: ObjectStoragePath | None = None) -> bool:
        path = path or self.checkpoint
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
        path = ObjectStoragePath(location, conn_id=self.conn_id) if "://" in location or location.startswith("/") \
            else self.job_root / location
        root = self.job_root.path.rstrip("/")
        target = path.path.rstrip("/")
        if not path.samestore(self.job_root) or not target.startswith(root + "/"):
            raise StateGateError(f"refusing {location!r}: it is outside the job root {self.job_root}")
        relative = target[len(root) + 1:]
        if relative.split("/")[0] in BOOKKEEPING:
            raise StateGateError(f"refusing {location!r}: that is the job root's own bookkeeping")
        if self._is_local:
            current = root
            for part in relative.split("/"):
                current = f"{current}/{part}"
                if os.path.islink(current):
                    raise StateGateError(f"refusing {location!r}: {current} is a symbolic link")
        return path

    def archive_state(self, location: str = "checkpoint", stamp: str | None = None) -> ObjectStoragePath | None:
        """Move the state at ``location`` to ``archive/<stamp>/``; None when there is none to move.

        On a local root one rename: a crash leaves the state where it was or wholly archived. On a
        store without directory renames (object stores) the move is copy, verify (size and SHA-256
        of every file), mark the archive complete, delete. ``archiving.json`` in the job root
        records the step, so a crash at any point is finished (or undone) by the next call:

        * crashed while copying: the state is untouched; the partial copy is discarded, the move
          starts over;
        * crashed while deleting: the archive is complete and verified; the rest is deleted. The
          state's ``_stategate`` record goes first, so the job's own guard refuses what is left.
        """
        source = self.inside(location)
        resumed = self.finish_archiving()
        if not self.has_state(source):
            return resumed
        stamp = stamp or _stamp(None)
        target = self.job_root / "archive" / stamp / source.name
        if target.exists():
            raise StateGateError(f"refusing to archive over {target}: it already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        if self._is_local:
            try:
                os.rename(source.path, target.path)
                return target
            except OSError as error:
                if error.errno != errno.EXDEV:
                    raise
        return self._copy_verify_delete(source, target)

    @property
    def intent_path(self) -> ObjectStoragePath:
        return self.job_root / "archiving.json"

    def finish_archiving(self) -> ObjectStoragePath | None:
        """Finish (or undo) a move a crash interrupted; the archive, if it is complete."""
        if not self.intent_path.exists():
            return None
        intent = json.loads(self.intent_path.read_text())
        source, target = self.job_root / intent["source"], self.job_root / intent["target"]
        if intent["step"] == "copying":
            if target.exists():
                target.rmdir(recursive=True)  # an unverified copy; the source is intact
            self.intent_path.unlink()
            return None
        if source.exists():
            source.rmdir(recursive=True)
        self.intent_path.unlink()
        return target

    def _copy_verify_delete(self, source: ObjectStoragePath, target: ObjectStoragePath) -> ObjectStoragePath:
        base = len(self.job_root.path.rstrip("/")) + 1
        intent = {"source": source.path[base:], "target": target.path[base:],
                  "started": datetime.now(timezone.utc).isoformat()}
        _replace_text(self.intent_path, json.dumps({**intent, "step": "copying"}))
        source.copy(target, recursive=True)
        expected, copied = _inventory(source), _inventory(target)
        if copied != expected:
            target.rmdir(recursive=True)
            self.intent_path.unlink()
            differ = sorted(k for k in expected.keys() | copied.keys() if expected.get(k) != copied.get(k))
            raise StateGateError(f"the archive copy of {source} differs in {len(differ)} files "
                                 f"({', '.join(differ[:3])}); the state was kept where it is")
        _replace_text(self.intent_path, json.dumps({**intent, "step": "deleting"}))
        record = source / RECORD_DIR / "job.sql"  # first: the job refuses a checkpoint without it
        if record.exists():
            record.unlink()
        source.rmdir(recursive=True)
        self.intent_path.unlink()
        return target


def _replace_text(path: ObjectStoragePath, text: str) -> None:
    staged = path.parent / f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp"
    staged.write_text(text)
    staged.replace(path)


def _inventory(path: ObjectStoragePath) -> dict[str, tuple[int, str]]:
    """Relative path -> (size, SHA-256) of every file under ``path``."""
    base = len(path.path.rstrip("/")) + 1
    inventory = {}
    for file in path.rglob("*"):
        if file.is_file():
            digest = hashlib.sha256()
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            inventory[file.path[base:]] = (file.stat().st_size, digest.hexdigest())
    return inventory


def _stamp(iso: str | None) -> str:
    when = datetime.fromisoformat(iso) if iso else datetime.now(timezone.utc)
    return when.strftime("%Y%m%dT%H%M%S.%fZ")

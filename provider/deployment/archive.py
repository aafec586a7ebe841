"""Clearing state by moving it to ``archive/``: nothing is ever deleted unarchived."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from datetime import datetime, timezone

from airflow.sdk import ObjectStoragePath

from stategate.provider.deployment.records import read_json, stamp as time_stamp
from stategate.provider.deployment.root import ARCHIVE, CHECKPOINT, INTENT, JobRoot, StateGateError, fresh, replace_text
from stategate.spark_jobs.checkpoint import JOB_SQL, RECORD_DIR


class Archiver:
    """Moves a job's state to ``archive/<stamp>/`` (and an archived checkpoint back, for a rollback),
    and finishes a move a crash interrupted.

    On a local filesystem one rename: a crash leaves the state where it was or wholly archived. On
    a store without directory renames (object stores) the move is copy, verify (size and SHA-256 of
    every file), mark the archive complete, delete. ``archiving.json`` records the step, so a crash
    at any point is finished (or undone) by the next call:

    * crashed while copying: the state is untouched; the partial copy is discarded, the move
      starts over;
    * crashed while deleting: the archive is complete and verified; the rest is deleted. The
      state's ``_stategate`` record goes first, so the job's own guard refuses what is left.
    """

    def __init__(self, root: JobRoot) -> None:
        self.root = root

    @property
    def intent_path(self) -> ObjectStoragePath:
        return self.root.state_path(INTENT)

    def archive(self, location: str = "checkpoint", stamp: str | None = None) -> ObjectStoragePath | None:
        """Move the state at ``location`` (inside the job root) to ``archive/<stamp>/``; None when
        there is none to move."""
        source = self.root.inside(location)
        resumed = self.finish()
        if not self.root.has_state(source):
            return resumed
        target = self.root.state_path(ARCHIVE, stamp or time_stamp(None), source.name)
        if target.exists():
            raise StateGateError(f"refusing to archive over {target}: it already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        return self._move(source, target)

    def restore(self, archived: str) -> ObjectStoragePath:
        """Move the archived checkpoint ``archived`` (``archive/<stamp>/<name>``, relative to the
        job's state home, or as Spark names it) back to be the job's checkpoint. The checkpoint must
        hold no state (archive it first): nothing is overwritten."""
        self.finish()
        parts = self.archive_parts(archived)
        source = self.root.state_path(*parts) if parts is not None else None
        if source is None or not self.root.has_state(source):
            raise StateGateError(f"refusing to restore {archived}: it is not an archived checkpoint of "
                                 f"{self.root.job_name} ({ARCHIVE}/<stamp>/<name> under {self.root.state_home})")
        target = self.root.checkpoint
        if self.root.has_state(target):
            raise StateGateError(f"refusing to restore {archived} over {target}, which holds state: archive it "
                                 "first; nothing was moved")
        if target.exists():
            target.rmdir(recursive=True)  # an empty directory a move left behind
        restored = self._move(source, target)
        stamp = fresh(source.parent)
        if stamp.exists() and not any(True for _ in stamp.iterdir()):
            stamp.rmdir()  # the archive's own directory, now empty
        return restored

    def _move(self, source: ObjectStoragePath, target: ObjectStoragePath) -> ObjectStoragePath:
        """One rename on a local filesystem; else copy, verify, delete, each step in the intent."""
        if self.root.state_is_local:
            try:
                os.rename(source.path, target.path)
                return target
            except OSError as error:
                if error.errno != errno.EXDEV:
                    raise
        return self._copy_verify_delete(source, target)

    def archive_parts(self, location: str) -> tuple[str, ...] | None:
        """``location`` (``archive/<stamp>/<name>`` relative to the job's state home, or a full path
        or URI as Spark names it) as the parts of a path of the state home; None if it is not an
        archived state of this job."""
        home = self.root.spark_uri(self.root.state_home).rstrip("/")
        for prefix in (home + "/", self.root.state_home.path.rstrip("/") + "/"):
            if location.startswith(prefix):
                location = location[len(prefix):]
                break
        parts = tuple(location.strip("/").split("/"))
        if location.startswith("/") or "://" in location or len(parts) != 3 or parts[0] != ARCHIVE:
            return None
        return parts

    def finish(self) -> ObjectStoragePath | None:
        """Finish (or undo) a move a crash interrupted; the archive, if it is complete."""
        if not fresh(self.intent_path).exists():
            return None
        step, source, target = self._read_intent()
        if step == "copying":
            if target.exists():
                target.rmdir(recursive=True)  # an unverified copy; the source is intact
            self.intent_path.unlink()
            return None
        if source.exists():
            source.rmdir(recursive=True)
        self.intent_path.unlink()
        return target

    def _read_intent(self) -> tuple[str, ObjectStoragePath, ObjectStoragePath]:
        """The step, source and target of an interrupted move, each path resolved as a new one would
        be: an archive (a state path inside the job root to ``archive/<stamp>/<name>``) or a restore
        (``archive/<stamp>/<name>`` to the checkpoint). An intent that names anything else (edited,
        corrupted: ``../``, an absolute path, the job's bookkeeping) is refused and everything is
        kept, the intent too, for a human to read."""
        intent = read_json(self.intent_path)
        problem = None
        if not isinstance(intent, dict) or intent.get("step") not in ("copying", "deleting") \
                or not all(isinstance(intent.get(k), str) for k in ("source", "target")):
            problem = "it is not a move's record (step copying|deleting, source, target)"
        elif intent["target"] == CHECKPOINT:
            restored = self.archive_parts(intent["source"])
            if restored is not None:
                return intent["step"], self.root.state_path(*restored), self.root.checkpoint
            problem = f"its source {intent['source']!r} is not {ARCHIVE}/<stamp>/<name>"
        elif self.archive_parts(intent["target"]) is None:
            problem = f"its target {intent['target']!r} is not {ARCHIVE}/<stamp>/<name>"
        if problem is None:
            try:
                source = self.root.inside(intent["source"])
                if "://" in intent["source"] or intent["source"].startswith("/"):
                    raise StateGateError(f"its source {intent['source']!r} is not relative to the job root")
                return intent["step"], source, self.root.state_path(*intent["target"].split("/"))
            except StateGateError as error:
                problem = str(error)
        raise StateGateError(f"refusing to finish the move recorded in {self.intent_path}: {problem}. Nothing was "
                             "moved or deleted; check the state and archive/, then remove the record")

    def _copy_verify_delete(self, source: ObjectStoragePath, target: ObjectStoragePath) -> ObjectStoragePath:
        base = len(self.root.state_home.path.rstrip("/")) + 1
        intent = {"source": source.path[base:], "target": target.path[base:],
                  "started": datetime.now(timezone.utc).isoformat()}
        replace_text(self.intent_path, json.dumps({**intent, "step": "copying"}))
        source.copy(target, recursive=True)
        expected, copied = _inventory(source), _inventory(target)
        if copied != expected:
            target.rmdir(recursive=True)
            self.intent_path.unlink()
            differ = sorted(k for k in expected.keys() | copied.keys() if expected.get(k) != copied.get(k))
            raise StateGateError(f"the archive copy of {source} differs in {len(differ)} files "
                                 f"({', '.join(differ[:3])}); the state was kept where it is")
        replace_text(self.intent_path, json.dumps({**intent, "step": "deleting"}))
        record = source / RECORD_DIR / JOB_SQL  # first: the job refuses a checkpoint without it
        if record.exists():
            record.unlink()
        source.rmdir(recursive=True)
        self.intent_path.unlink()
        return target


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

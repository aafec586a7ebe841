"""The deployment record of a job: what is deployed, what was before it, and the SQL a run staged."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import ObjectStoragePath

from stategate.analyzer.layout import watermark_of_offset_log
from stategate.provider.deployment.root import (CHECKPOINT, HISTORY, NAME_BYTES, RECORD, STAGED, JobRoot,
                                                StateGateError, fresh, read_text, replace_text)
from stategate.spark_jobs import RECORD_DIR, query_dir_name


class RecordStore:
    """``deployment.json`` and ``history/`` of one job, and what its checkpoint says about itself.

    Each record is written beside its target and renamed over it (one PUT on object stores), so a
    reader, or a crash, sees the old or the new record, never a torn one.
    """

    def __init__(self, root: JobRoot) -> None:
        self.root = root

    @property
    def path(self) -> ObjectStoragePath:
        return self.root.record_path(RECORD)

    def read(self) -> dict[str, Any] | None:
        """The deployed record; None when there is none. A record that is not one (truncated,
        edited, another file's content, huge) is refused by name: nothing is decided on it."""
        try:
            return _record(read_json(fresh(self.path)), self.path)
        except FileNotFoundError:
            return None

    def write(self, record: dict[str, Any]) -> None:
        """Make ``record`` the deployed version; the previous one moves to ``history/``."""
        self.root.path.mkdir(parents=True, exist_ok=True)
        previous = self.read()
        if previous is not None:
            history = self.root.record_path(HISTORY, f"{stamp(previous.get('deployed_at'))}.json")
            history.parent.mkdir(parents=True, exist_ok=True)
            replace_text(history, json.dumps(previous, indent=2))
        replace_text(self.path, json.dumps(record, indent=2))

    def history(self) -> list[dict[str, Any]]:
        folder = fresh(self.root.record_path(HISTORY))
        if not folder.exists():
            return []
        return [_record(read_json(self.root.record_path(HISTORY, p.name)), p)
                for p in sorted(folder.iterdir(), key=lambda p: p.name)]

    def state_signature(self) -> dict[str, Any] | None:
        """The signature the Spark job recorded beside its state (with the slot of each aggregate):
        the authority on how the checkpoint is laid out."""
        path = fresh(self.root.state_path(CHECKPOINT, RECORD_DIR, "signature.json"))
        if not path.exists():
            return None
        signature = read_json(path)
        if not isinstance(signature, dict):
            raise StateGateError(f"{path} is not a state signature (a JSON object); nothing was changed")
        return signature

    def watermarks(self, pipelines: list[str]) -> dict[str, int | None]:
        """Each pipeline's watermark as its last planned batch left it (Spark's offset log): it
        tells which retired slots of the layout no open window can read any more."""
        found: dict[str, int | None] = {}
        for pipeline in pipelines:
            offsets = fresh(self.root.state_path(CHECKPOINT, query_dir_name(pipeline), "offsets"))
            batches = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()] if offsets.exists() else []
            found[pipeline] = watermark_of_offset_log(read_text(
                self.root.state_path(CHECKPOINT, query_dir_name(pipeline), "offsets", str(max(batches))))) \
                if batches else None
        return found

    def stage_sql(self, sql: str, run_id: str) -> ObjectStoragePath:
        """Store the SQL this run analysed, beside the state: spark-submit runs exactly that text,
        not a newer file, from a store Spark reads."""
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:NAME_BYTES - len(".sql")]
        path = self.root.state_path(STAGED, f"{name}.sql")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql)
        return path


#: The largest record stategate reads: a job's SQL with its signature, with room to spare.
MAX_RECORD_BYTES = 64 << 20


def read_json(path: ObjectStoragePath) -> Any:
    """A JSON file of the job root, refused by name if it is too large or not JSON."""
    size = path.fs.size(path.path)
    if size is not None and size > MAX_RECORD_BYTES:
        raise StateGateError(f"{path} is {size} bytes, more than a record can be ({MAX_RECORD_BYTES}); "
                             "nothing was changed")
    text = read_text(path)
    try:
        return json.loads(text)
    except ValueError as error:
        raise StateGateError(f"{path} is not valid JSON ({error}): truncated or edited? Nothing was changed; "
                             "restore it from history/ or remove it to redeploy from scratch") from None


def _record(value: Any, path: ObjectStoragePath) -> dict[str, Any]:
    """A deployment record: an object whose ``sql`` is text."""
    if not isinstance(value, dict) or not isinstance(value.get("sql"), str):
        raise StateGateError(f"{path} is not a deployment record (a JSON object with the deployed 'sql'); "
                             "nothing was changed")
    return value


def stamp(iso: str | None) -> str:
    """A file-name-safe UTC time stamp (now, or of an ISO time), sorting as time does."""
    when = datetime.fromisoformat(iso) if iso else datetime.now(timezone.utc)
    return when.strftime("%Y%m%dT%H%M%S.%fZ")

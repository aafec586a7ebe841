"""The deployment record of a job: what is deployed, what was before it, and the SQL a run staged."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import ObjectStoragePath

from stategate.analyzer.layout import watermark_of_offset_log
from stategate.provider.deployment.root import HISTORY, RECORD, STAGED, JobRoot, fresh, read_text, replace_text
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
        return self.root / RECORD

    def read(self) -> dict[str, Any] | None:
        try:
            return json.loads(read_text(fresh(self.path)))
        except FileNotFoundError:
            return None

    def write(self, record: dict[str, Any]) -> None:
        """Make ``record`` the deployed version; the previous one moves to ``history/``."""
        self.root.path.mkdir(parents=True, exist_ok=True)
        previous = self.read()
        if previous is not None:
            history = self.root / HISTORY / f"{stamp(previous.get('deployed_at'))}.json"
            history.parent.mkdir(parents=True, exist_ok=True)
            replace_text(history, json.dumps(previous, indent=2))
        replace_text(self.path, json.dumps(record, indent=2))

    def history(self) -> list[dict[str, Any]]:
        folder = fresh(self.root / HISTORY)
        if not folder.exists():
            return []
        return [json.loads(read_text(p)) for p in sorted(folder.iterdir(), key=lambda p: p.name)]

    def state_signature(self) -> dict[str, Any] | None:
        """The signature the Spark job recorded beside its state (with the slot of each aggregate):
        the authority on how the checkpoint is laid out."""
        path = fresh(self.root.checkpoint / RECORD_DIR / "signature.json")
        if not path.exists():
            return None
        return json.loads(path.read_text())

    def watermarks(self, pipelines: list[str]) -> dict[str, int | None]:
        """Each pipeline's watermark as its last planned batch left it (Spark's offset log): it
        tells which retired slots of the layout no open window can read any more."""
        found: dict[str, int | None] = {}
        for pipeline in pipelines:
            offsets = fresh(self.root.checkpoint / query_dir_name(pipeline) / "offsets")
            batches = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()] if offsets.exists() else []
            found[pipeline] = watermark_of_offset_log((offsets / str(max(batches))).read_text()) if batches else None
        return found

    def stage_sql(self, sql: str, run_id: str) -> ObjectStoragePath:
        """Store the SQL this run analysed, beside the state: spark-submit runs exactly that text,
        not a newer file, from a store Spark reads."""
        path = self.root.state_home / STAGED / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', run_id)}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql)
        return path


def stamp(iso: str | None) -> str:
    """A file-name-safe UTC time stamp (now, or of an ISO time), sorting as time does."""
    when = datetime.fromisoformat(iso) if iso else datetime.now(timezone.utc)
    return when.strftime("%Y%m%dT%H%M%S.%fZ")

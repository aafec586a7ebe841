"""The deployment record of a job: what is deployed, what was before it, and the SQL a run staged."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import ObjectStoragePath

from stategate.provider.deployment.root import (HISTORY, NAME_BYTES, RECORD, STAGED, JobRoot, StateGateError,
                                                fresh, read_text, replace_text)


@dataclass(frozen=True)
class DeploymentRecord:
    """``deployment.json``: the version deployed. The gate drafts it from what it analysed, the
    record task completes it once the job ran with it (:meth:`deployed`), and the next gate reads it.

    :param sql: the job's SQL, as the gate analysed and staged it
    :param verdict: the gate's verdict (``FULL`` ... ``INCOMPATIBLE``, or ``FIRST_DEPLOY``)
    :param job: the job's name
    :param signature: the state layout the job recorded beside its state (``analyzer.signature``)
    :param deployed_at: when the record task recorded it (ISO 8601, UTC)
    :param dag_id: the DAG that deployed it
    :param dag_run_id: the DAG run that deployed it
    :param application: the application that ran it when it was recorded (its driver's own words,
        ``spark_jobs.checkpoint.Application``): what is running, where, since when
    :param archived: the checkpoint this redeploy archived (the previous version's state), as Spark
        names it; a rollback restores it
    """

    sql: str
    verdict: str
    job: str = ""
    signature: dict[str, Any] | None = None
    deployed_at: str | None = None
    dag_id: str | None = None
    dag_run_id: str | None = None
    application: dict[str, Any] | None = None
    archived: str | None = None

    def deployed(self, *, signature: dict[str, Any] | None, application: dict[str, Any] | None,
                 archived: str | None, dag_id: str, dag_run_id: str) -> DeploymentRecord:
        """The draft, completed once the job ran with it."""
        return replace(self, signature=signature, application=application, archived=archived,
                       deployed_at=datetime.now(timezone.utc).isoformat(), dag_id=dag_id, dag_run_id=dag_run_id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: Any, path: object = "the record") -> DeploymentRecord:
        """A record as written (an XCom, a file); refused by name if it is not one, so that nothing
        is decided on it."""
        if not isinstance(value, dict) or not isinstance(value.get("sql"), str):
            raise StateGateError(f"{path} is not a deployment record (a JSON object with the deployed 'sql'); "
                                 "nothing was changed")
        known = {name: value[name] for name in cls.__dataclass_fields__ if name in value}
        return cls(**{"verdict": "", **known})


class RecordStore:
    """``deployment.json`` and ``history/`` of one job, and the SQL each run staged.

    Each record is written beside its target and renamed over it (one PUT on object stores), so a
    reader, or a crash, sees the old or the new record, never a torn one.
    """

    def __init__(self, root: JobRoot) -> None:
        self.root = root

    @property
    def path(self) -> ObjectStoragePath:
        return self.root.record_path(RECORD)

    def read(self) -> DeploymentRecord | None:
        """The deployed record; None when there is none. A record that is not one (truncated,
        edited, another file's content, huge) is refused by name: nothing is decided on it."""
        try:
            return DeploymentRecord.from_dict(read_json(fresh(self.path)), self.path)
        except FileNotFoundError:
            return None

    def write(self, record: DeploymentRecord) -> None:
        """Make ``record`` the deployed version; the previous one moves to ``history/``."""
        self.root.path.mkdir(parents=True, exist_ok=True)
        previous = self.read()
        if previous is not None:
            history = self.root.record_path(HISTORY, f"{stamp(previous.deployed_at)}.json")
            history.parent.mkdir(parents=True, exist_ok=True)
            replace_text(history, json.dumps(previous.to_dict(), indent=2))
        replace_text(self.path, json.dumps(record.to_dict(), indent=2))

    def history(self) -> list[DeploymentRecord]:
        """The earlier deployments, oldest first."""
        folder = fresh(self.root.record_path(HISTORY))
        if not folder.exists():
            return []
        return [DeploymentRecord.from_dict(read_json(self.root.record_path(HISTORY, p.name)), p)
                for p in sorted(folder.iterdir(), key=lambda p: p.name)]

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


def stamp(iso: str | None) -> str:
    """A file-name-safe UTC time stamp (now, or of an ISO time), sorting as time does."""
    when = datetime.fromisoformat(iso) if iso else datetime.now(timezone.utc)
    return when.strftime("%Y%m%dT%H%M%S.%fZ")

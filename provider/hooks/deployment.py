"""The deployment root of a job, as Airflow tasks and ``stategate check --deployed`` reach it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow.sdk import BaseHook

from stategate.analyzer import Finding, JobModel, Report, SQLModelError, Verdict, build, compare_models
from stategate.analyzer.cutover import with_volumes
from stategate.provider.deployment import Archiver, JobRoot, RecordStore, RedeployLock, StateGateError
from stategate.provider.deployment.checkpoint import DeployedCheckpoint

__all__ = ["Deployed", "DeploymentHook", "StateGateError"]


@dataclass(frozen=True)
class Deployed:
    """What is deployed, and how the new SQL compares with it.

    :param record: the deployment record (None: never deployed here)
    :param signature: the deployed state layout (the job's own record beside its state first)
    :param watermarks: each pipeline's watermark in the checkpoint
    :param report: the verdict's report; None for a first deploy (no record and no state)
    """

    record: dict[str, Any] | None
    signature: dict[str, Any] | None
    watermarks: dict[str, int | None]
    report: Report | None


class DeploymentHook(BaseHook):
    """One job's deployment root (see :mod:`stategate.provider.deployment.root`): its record store,
    redeploy lock and archiver, and the comparison the gate branches on.

    :param root: the root of all jobs (``file:///srv/stategate``, ``s3://bucket/stategate``, ...)
    :param job_name: the job, a directory under ``root``
    :param conn_id: the Airflow connection that authenticates the roots (object stores); empty
        or None: none
    :param checkpoint_root: where checkpoints, archives and staged SQL live when not beside the
        records, for example records on S3 and checkpoints on the cluster's HDFS; empty or None:
        beside them
    """

    conn_name_attr = "conn_id"
    hook_name = "stategate deployment root"

    def __init__(self, root: str, job_name: str, conn_id: str | None = None,
                 checkpoint_root: str | None = None) -> None:
        super().__init__()
        # A templated operator field renders "none" as an empty string.
        self.conn_id = conn_id or None
        self.job = JobRoot(root, job_name, self.conn_id, checkpoint_root or None)
        self.records = RecordStore(self.job)
        self.lock = RedeployLock(self.job)
        self.archiver = Archiver(self.job)

    def compare(self, model: JobModel) -> Deployed:
        """The new SQL's model against what is deployed: the report the gate branches on.

        Read only: ``stategate check --deployed`` gives the same answer without changing anything."""
        record = self.records.read()
        signature = self.records.state_signature() or (record or {}).get("signature")
        watermarks = self.records.watermarks([p.name for p in model.pipelines])
        return Deployed(record, signature, watermarks, self._report(record, model, signature, watermarks))

    def _report(self, record: dict | None, model: JobModel, signature: dict | None,
                watermarks: dict[str, int | None]) -> Report | None:
        has_state = self.job.has_state()
        if record is None and not has_state:
            return None
        if record is None:
            return Report((Finding("stategate.no-record", Verdict.UNKNOWN,
                                   f"{self.job.checkpoint} holds state but there is no deployment record: "
                                   "the SQL that built it is unknown"),))
        if not has_state:
            return None
        try:
            old = build(record["sql"], source=str(self.records.path))
        except SQLModelError as error:
            return Report((Finding("stategate.record-unreadable", Verdict.UNKNOWN,
                                   f"the deployed SQL no longer parses: {error}"),))
        report = compare_models(old, model, signature, watermarks)
        if report.verdict < Verdict.UNKNOWN:
            return report  # the state is reused: nothing is replayed
        # What clearing the state would cost: the take-over reads this checkpoint once it is archived.
        return with_volumes(report, DeployedCheckpoint(self.job), self.job.spark_uri(self.job.checkpoint), model)

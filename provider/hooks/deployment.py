"""The deployment root of a job, as Airflow tasks and ``stategate check --deployed`` reach it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property

from airflow.sdk import BaseHook

from stategate.analyzer import FIRST_DEPLOY, JobModel, Verdict
from stategate.analyzer.judgement import Deployed, Judgement, judge
from stategate.analyzer.signature import state_signature
from stategate.provider.deployment import Archiver, JobRoot, RecordStore, RedeployLock, StateGateError
from stategate.provider.deployment.checkpoint import DeployedCheckpoint
from stategate.provider.deployment.records import DeploymentRecord
from stategate.spark_jobs.checkpoint import JOB_SQL, Checkpoint
from stategate.spark_jobs.cutover import with_volumes

__all__ = ["Branch", "Decision", "DeploymentHook", "OnUnknown", "StateGateError", "judge_deployment"]


class OnUnknown(str, Enum):
    """What a redeploy does on an UNKNOWN verdict: ask a human, clear the state, or fail."""

    APPROVE = "approve"
    CLEAR_STATE = "clear_state"
    FAIL = "fail"


class Branch(str, Enum):
    """Where a redeploy goes: restart from the checkpoint, clear (archive) the state first, start
    fresh where nothing is deployed, ask a human, or stop."""

    RESTART = "restart"
    CLEAR = "clear"
    FIRST_DEPLOY = "first_deploy"
    APPROVAL = "approval"
    FAIL = "fail"


@dataclass(frozen=True)
class Decision:
    """What a redeploy of new SQL does, decided by the hook; the gate maps it onto its tasks.

    :param branch: where the redeploy goes
    :param judgement: the new SQL against what is deployed (its report; None for a first deploy)
    :param record: the deployment record to store once the job runs with the new SQL (a draft)
    """

    branch: Branch
    judgement: Judgement
    record: DeploymentRecord

    @property
    def notify(self) -> bool:
        """Whether people are told: the state cannot be reused as it is (INCOMPATIBLE, UNKNOWN)."""
        verdict = self.judgement.verdict
        return verdict is not None and verdict >= Verdict.UNKNOWN


class DeploymentHook(BaseHook):
    """One job's deployment root (see :mod:`stategate.provider.deployment.root`): its record store,
    redeploy lock and archiver, and the decision the gate branches on.

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

    @cached_property
    def checkpoint(self) -> Checkpoint:
        """The deployed checkpoint, read through the job root (no link followed) by the URIs Spark wrote."""
        return Checkpoint(DeployedCheckpoint(self.job), self.job.spark_uri(self.job.checkpoint))

    def deployed(self, model: JobModel) -> Deployed | None:
        """What is deployed, as the judgement reads it; None where nothing is (no record, no state).

        The state's own record beside the checkpoint is the authority on the SQL that built it and
        its layout (the job wrote it as it started); ``deployment.json`` stands in where it has none."""
        record, checkpoint = self.records.read(), self.checkpoint
        holds_state = checkpoint.holds_state()
        if record is None and not holds_state:
            return None
        sql, source = checkpoint.recorded_sql(), checkpoint.record_path(JOB_SQL)
        if sql is None and record is not None:
            sql, source = record.sql, str(self.records.path)
        try:
            signature = checkpoint.signature() or (record.signature if record is not None else None)
        except ValueError as error:
            raise StateGateError(f"{error}; nothing was changed") from None
        return Deployed.recorded(sql, source, signature, checkpoint.watermarks([p.name for p in model.pipelines]),
                                 holds_state, missing=f"{self.job.checkpoint} holds state but there is no deployment "
                                                      "record: the SQL that built it is unknown")

    def judge(self, model: JobModel) -> Judgement:
        """The new SQL's model against what is deployed; where the state may be cleared, what its
        report's replay would read of the deployed checkpoint's input. Read only: ``stategate check
        --deployed`` gives the same answer without changing anything."""
        judgement = judge(model, self.deployed(model))
        report = judgement.report
        if report is None or report.verdict < Verdict.UNKNOWN:
            return judgement  # the state is reused: nothing is replayed
        checkpoint = self.checkpoint
        return replace(judgement, report=with_volumes(report, checkpoint.files, checkpoint.uri, model))

    def decide(self, model: JobModel, sql: str, on_unknown: OnUnknown) -> Decision:
        """Where a redeploy of ``sql`` (whose model is ``model``) goes, and what it will record."""
        judgement = self.judge(model)
        verdict = judgement.verdict
        if verdict is None:
            branch = Branch.FIRST_DEPLOY
        elif verdict <= Verdict.PARTIAL:
            branch = Branch.RESTART
        elif verdict is Verdict.INCOMPATIBLE or on_unknown is OnUnknown.CLEAR_STATE:
            branch = Branch.CLEAR
        else:
            branch = Branch.FAIL if on_unknown is OnUnknown.FAIL else Branch.APPROVAL
        # Where the job runs on the judged layout, the draft says so; the job records its own beside its state.
        runs_on = judgement.layout if branch in (Branch.RESTART, Branch.FIRST_DEPLOY) else None
        record = DeploymentRecord(sql, verdict.value if verdict is not None else FIRST_DEPLOY, self.job.job_name,
                                  state_signature(model, runs_on) if runs_on is not None else None)
        return Decision(branch, judgement, record)


def judge_deployment(model: JobModel, root: str, job_name: str, conn_id: str | None) -> Judgement:
    """``stategate check --deployed``: the gate's judgement of ``model``, read only. Registered as
    the ``stategate.deployments`` entry point, so the analyzer's command line reaches it without
    importing the provider; a root it refuses is a ``ValueError`` there."""
    try:
        return DeploymentHook(root, job_name, conn_id).judge(model)
    except StateGateError as error:
        raise ValueError(str(error)) from None

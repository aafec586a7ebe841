"""The deployment root of a job, as Airflow tasks and ``stategate check --deployed`` reach it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property

from airflow.sdk import BaseHook, ObjectStoragePath

from stategate.analyzer import FIRST_DEPLOY, JobModel, Verdict, build
from stategate.analyzer.judgement import Deployed, Judgement, judge
from stategate.analyzer.signature import state_signature
from stategate.provider.deployment import Archiver, JobRoot, RecordStore, RedeployLock, StateGateError
from stategate.provider.deployment.checkpoint import DeployedCheckpoint
from stategate.provider.deployment.records import DeploymentRecord
from stategate.provider.deployment.root import CHECKPOINT
from stategate.spark_jobs.checkpoint import JOB_SQL, Application, WritableCheckpoint
from stategate.spark_jobs.cutover import NONE, TakeOver, seam, with_volumes
from stategate.spark_jobs.lifecycle import Stopped, sql_digest, stop

__all__ = ["Branch", "Decision", "DeploymentHook", "OnUnknown", "StateGateError", "judge_deployment"]

#: What a deployment record says of a rollback that restored the state of the version it returns to.
RESTORED = "RESTORED"


class OnUnknown(str, Enum):
    """What a redeploy does on an UNKNOWN verdict: ask a human, clear the state, or fail."""

    APPROVE = "approve"
    CLEAR_STATE = "clear_state"
    FAIL = "fail"


class Branch(str, Enum):
    """Where a redeploy goes: leave the running job alone (its SQL and trigger unchanged), restore
    the archived state of the version a rollback returns to, restart from the checkpoint, clear
    (archive) the state first, start fresh where nothing is deployed, ask a human, or stop."""

    UNCHANGED = "unchanged"
    RESTORE = "restore"
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
    :param restore: the archived checkpoint a rollback restores (as Spark names it)
    """

    branch: Branch
    judgement: Judgement
    record: DeploymentRecord
    restore: str | None = None

    @property
    def accept(self) -> Verdict:
        """The worst verdict the restarted job may accept: the judgement's, or FULL where a rollback
        restored the state the job's own SQL built (that restart changes nothing)."""
        verdict = self.judgement.verdict
        return Verdict.FULL if self.branch is Branch.RESTORE or verdict is None else verdict

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
    def checkpoint(self) -> WritableCheckpoint:
        """The deployed checkpoint, through the job root (no link followed), by the URIs Spark wrote."""
        return WritableCheckpoint(DeployedCheckpoint(self.job), self.job.spark_uri(self.job.checkpoint))

    def running(self) -> Application | None:
        """The application running on the checkpoint now; None where none is."""
        app = self.checkpoint.application()
        return app if app is not None and app.alive() else None

    def stop_job(self, timeout_s: float, by: str) -> Stopped:
        """Ask the running job to stop after the micro-batch it is in, and wait (:mod:`spark_jobs.lifecycle`)."""
        return stop(self.checkpoint, timeout_s, by)

    def clear_state(self, location: str, stamp: str | None) -> ObjectStoragePath | None:
        """Archive the state at ``location``, never while a job runs on the checkpoint: its driver
        would go on writing what is being moved."""
        running = self.running()
        if running is not None:
            raise StateGateError(f"application {running.id} is {running.state.value} on {self.job.checkpoint} (last "
                                 f"heartbeat {running.heartbeat_at}): stop it before its state is archived; nothing "
                                 "was moved")
        return self.archiver.archive(location, stamp=stamp)

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
                                                      "record: the SQL that built it is unknown",
                                 carried=checkpoint.carried())

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

    def decide(self, model: JobModel, sql: str, on_unknown: OnUnknown, trigger: str,
               restore: str | None = None) -> Decision:
        """Where a redeploy of ``sql`` (whose model is ``model``) to run under ``trigger`` goes, and
        what it will record. A job running that SQL under that trigger is left alone; a rollback
        that can ``restore`` the archived state of the version it returns to does."""
        judgement = self.judge(model)
        verdict = judgement.verdict
        running = self.running()
        if running is not None and running.sql_digest == sql_digest(sql) and running.trigger == trigger:
            branch = Branch.UNCHANGED
        elif restore is not None:
            branch = Branch.RESTORE
        elif verdict is None:
            branch = Branch.FIRST_DEPLOY
        elif verdict <= Verdict.PARTIAL:
            branch = Branch.RESTART
        elif verdict is Verdict.INCOMPATIBLE or on_unknown is OnUnknown.CLEAR_STATE:
            branch = Branch.CLEAR
        else:
            branch = Branch.FAIL if on_unknown is OnUnknown.FAIL else Branch.APPROVAL
        # Where the job runs on the judged layout, the draft says so; the job records its own beside its state.
        runs_on = judgement.layout if branch in (Branch.RESTART, Branch.FIRST_DEPLOY) else None
        said = RESTORED if branch is Branch.RESTORE else verdict.value if verdict is not None else FIRST_DEPLOY
        record = DeploymentRecord(sql, said, self.job.job_name,
                                  state_signature(model, runs_on) if runs_on is not None else None)
        return Decision(branch, judgement, record, restore if branch is Branch.RESTORE else None)

    # -------------------------------------------------------------------------------- rollback
    def rollback_target(self) -> DeploymentRecord:
        """The deployment a rollback returns to: the one before the version that last ran on the
        checkpoint. That version is the recorded one (its redeploy became healthy): the deployment
        before it, from ``history/``. Or it is another, whose redeploy never became healthy and so
        was never recorded: the recorded one."""
        record = self.records.read()
        if record is None:
            raise StateGateError(f"nothing is deployed for {self.job.job_name}: there is nothing to roll back to")
        app = self.checkpoint.application()
        if app is not None and app.sql_digest != sql_digest(record.sql):
            return record
        history = self.records.history()
        if not history:
            raise StateGateError(f"{self.job.job_name} has one deployment only: there is nothing earlier to roll back to")
        return history[-1]

    def restorable(self, target: DeploymentRecord) -> str | None:
        """The archived checkpoint that holds ``target``'s state, where the deployed checkpoint took
        over from it (the redeploy being undone cleared it); as Spark names it."""
        taken = TakeOver.recorded(self.checkpoint)
        parts = self.archiver.archive_parts(taken.archived) if taken is not None and taken.archived else None
        if parts is None:
            return None
        archived = WritableCheckpoint(DeployedCheckpoint(self.job, parts), self.job.spark_uri(self.job.state_path(*parts)))
        return archived.uri if archived.recorded_sql() == target.sql else None

    def roll_back(self, stop_timeout_s: float, by: str, stamp: str | None) -> tuple[DeploymentRecord, str | None]:
        """Return to the deployed version after a redeploy whose new version did not become healthy:
        stop the new version; where the redeploy cleared the state, restore it; where it restarted
        on it and committed nothing, put back the record of what the state is (the new version's
        guard had recorded its own SQL and layout, which no micro-batch ever used). The version
        returned to, and the archive restored, if any. The job is then submitted again."""
        target = self.rollback_target()
        stopped = self.stop_job(stop_timeout_s, by)
        if not stopped.down:
            raise StateGateError(stopped.message)
        archived = self.restorable(target)
        if archived is not None:
            self.restore(archived, build(target.sql), stamp)
            return target, archived
        failed = self.checkpoint.application()
        untouched = failed is not None and all(
            (done[-1] if (done := self.checkpoint.query(p).committed()) else None) == before
            for p, before in failed.committed_at_start.items())
        if untouched and failed is not None and failed.sql_digest != sql_digest(target.sql) \
                and target.signature is not None:
            self.checkpoint.record(target.sql, target.signature)
        return target, None

    def restore(self, archived: str, model: JobModel, stamp: str | None) -> str | None:
        """Restore the archived state ``archived`` of the version whose model is ``model``: the
        deployed checkpoint (the replacing version's state) is archived first, nothing deleted, and
        the restored checkpoint keeps the seam of a take-over: windows the replacing version emitted
        are not emitted again (:func:`spark_jobs.cutover.seam`). The archive of the replaced state,
        as Spark names it; None if it held none."""
        replaced = self.clear_state(CHECKPOINT, stamp)
        self.archiver.restore(archived)
        if replaced is None:
            return None
        parts = self.archiver.archive_parts(replaced.path)
        assert parts is not None, "the archiver archives into archive/<stamp>/<name>"
        replaced_uri = self.job.spark_uri(replaced)
        cuts = seam(DeployedCheckpoint(self.job, parts), replaced_uri, model)
        before = TakeOver.recorded(self.checkpoint)
        kept = before.cutovers if before is not None else {}
        merged = {**kept, **{name: replace(kept[name], watermark_ms=cut.watermark_ms) if name in kept else cut
                             for name, cut in cuts.items()}}
        # It still took over from what it took over from (a later rollback may restore that), and
        # keeps the seam with the version that replaced it.
        self.checkpoint.record_take_over(TakeOver(before.archived if before else None, before.replay if before else NONE,
                                                  merged).to_dict())
        return replaced_uri


def judge_deployment(model: JobModel, root: str, job_name: str, conn_id: str | None) -> Judgement:
    """``stategate check --deployed``: the gate's judgement of ``model``, read only. Registered as
    the ``stategate.deployments`` entry point, so the analyzer's command line reaches it without
    importing the provider; a root it refuses is a ``ValueError`` there."""
    try:
        return DeploymentHook(root, job_name, conn_id).judge(model)
    except StateGateError as error:
        raise ValueError(str(error)) from None

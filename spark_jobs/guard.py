"""The checkpoint guard: a job refuses to restart on state its SQL cannot reuse.

Beside Spark's own files the checkpoint holds stategate's record (:mod:`spark_jobs.checkpoint`):
the SQL the state was built by and the layout it implies. On start the given SQL is judged against
that record (:func:`analyzer.judgement.judge`, as the Airflow gate judges it):

* FULL / PARTIAL → restart from the checkpoint, with the recorded layout evolved to the new SQL;
* INCOMPATIBLE (a change the rules forbid, an older layout, aggregates that do not fit) → refuse;
  UNKNOWN → refuse unless a human accepted it (``--accept UNKNOWN``), and always where the state's
  origin is unknown (no record, or one that no longer parses): no layout to restart on;
* ``--fresh`` → only on a checkpoint without Spark state (at most a record): the job never
  deletes or overwrites state (archiving is the Airflow provider's job).

This protects anyone who runs the job by hand, outside the Airflow gate, too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from stategate.analyzer import JobModel, Report, Verdict
from stategate.analyzer.judgement import Deployed, judge
from stategate.analyzer.layout import JobLayout, plan
from stategate.analyzer.signature import state_signature
from stategate.spark_jobs.checkpoint import JOB_SQL, WritableCheckpoint


class CheckpointRefused(RuntimeError):
    """Starting would reuse (or silently discard) state the new SQL cannot use."""


@dataclass(frozen=True)
class CheckpointGuard:
    """Checks and records the SQL beside a checkpoint (any URI Spark can checkpoint to)."""

    checkpoint: WritableCheckpoint
    sql: str
    model: JobModel

    def check(self, fresh: bool = False, accept: Verdict = Verdict.PARTIAL) -> tuple[Report | None, JobLayout]:
        """Raise :class:`CheckpointRefused` unless starting is safe; the report of the change (None on
        a fresh start) and the layout to run with.

        ``accept`` is the worst verdict to restart on: PARTIAL by default, UNKNOWN once a human has
        decided the state is reusable. INCOMPATIBLE is never accepted."""
        checkpoint = self.checkpoint
        if not checkpoint.holds_state():
            return None, plan(self.model)
        if fresh:
            raise CheckpointRefused(
                f"--fresh given but the checkpoint {checkpoint.uri} holds state: the job never deletes "
                "state. Archive it first (the Airflow clear-state task does), then start fresh.")
        recorded = checkpoint.record_path(JOB_SQL)
        deployed = Deployed.recorded(
            checkpoint.recorded_sql(), recorded, checkpoint.signature(),
            checkpoint.watermarks([p.name for p in self.model.pipelines]),
            missing=f"the checkpoint {checkpoint.uri} has no stategate record ({recorded}): the SQL that built "
                    "its state is unknown, so a restart cannot be checked", carried=checkpoint.carried())
        judgement = judge(self.model, deployed)
        report = judgement.report
        assert report is not None, "a checkpoint holding state is judged against its record"
        verdict = report.verdict
        if judgement.layout is None or verdict is Verdict.INCOMPATIBLE or verdict > accept:
            reasons = "; ".join(f"{f.rule}: {f.message}" for f in report.findings
                                if f.effect in (Verdict.INCOMPATIBLE, Verdict.UNKNOWN))
            advice = ("a human must decide: restart with --accept UNKNOWN, or archive and start --fresh"
                      if verdict is Verdict.UNKNOWN and judgement.layout is not None
                      else "clear the state (archive the checkpoint) and start with --fresh")
            raise CheckpointRefused(
                f"refusing to restart from {checkpoint.uri}: verdict {verdict.value} ({reasons}); {advice}")
        return report, judgement.layout

    def holds_state(self) -> bool:
        return self.checkpoint.holds_state()

    def record(self, layout: JobLayout) -> None:
        """Store the SQL the state is now built by and its layout."""
        self.checkpoint.record(self.sql, {**state_signature(self.model, layout),
                                          "recorded_at": datetime.now(timezone.utc).isoformat()})

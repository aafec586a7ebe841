"""The checkpoint guard: a job refuses to restart on state its SQL cannot reuse.

Beside Spark's own files, the checkpoint directory holds ``_stategate/job.sql`` (the SQL the state
was built by) and ``_stategate/signature.json`` (the state layout it implies). On start the given SQL
is compared with the recorded one by the analyzer:

* FULL / PARTIAL → restart from the checkpoint;
* INCOMPATIBLE → refuse; UNKNOWN → refuse unless a human accepted it (``--accept UNKNOWN``);
* ``--fresh`` → only on a checkpoint without Spark state (at most a record): the job never
  deletes or overwrites state (archiving is the Airflow provider's job).

This protects anyone who runs the job by hand, outside the Airflow gate, too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from analyzer import JobModel, Report, Verdict, build, compare_models
from analyzer.signature import state_signature
from analyzer.errors import SQLModelError
from spark_jobs import RECORD_DIR
from spark_jobs.storage import HadoopStorage


class CheckpointRefused(RuntimeError):
    """Starting would reuse (or silently discard) state the new SQL cannot use."""


@dataclass
class CheckpointGuard:
    """Checks and records the SQL beside a checkpoint (any URI Spark can checkpoint to)."""

    checkpoint: str
    sql: str
    model: JobModel
    storage: HadoopStorage

    @property
    def record_dir(self) -> str:
        return f"{self.checkpoint.rstrip('/')}/{RECORD_DIR}"

    def check(self, fresh: bool = False, accept: Verdict = Verdict.PARTIAL) -> Report | None:
        """Raise :class:`CheckpointRefused` unless starting is safe; the report of the change, if any.

        ``accept`` is the worst verdict to restart on: PARTIAL by default, UNKNOWN once a human has
        decided the state is reusable. INCOMPATIBLE is never accepted."""
        if not self.holds_state():
            return None
        if fresh:
            raise CheckpointRefused(
                f"--fresh given but the checkpoint {self.checkpoint} holds state: the job never deletes "
                "state. Archive it first (the Airflow clear-state task does), then start fresh.")
        recorded = f"{self.record_dir}/job.sql"
        if not self.storage.exists(recorded):
            raise CheckpointRefused(
                f"the checkpoint {self.checkpoint} has no stategate record ({recorded}): the SQL that "
                "built its state is unknown, so a restart cannot be checked. Archive it and start fresh.")
        try:
            old = build(self.storage.read_text(recorded), source=recorded)
        except SQLModelError as error:
            raise CheckpointRefused(f"the recorded SQL no longer parses: {error}") from None
        report = compare_models(old, self.model)
        verdict = report.verdict
        if verdict is Verdict.INCOMPATIBLE or verdict > accept:
            reasons = "; ".join(f"{f.rule}: {f.message}" for f in report.findings
                                if f.effect in (Verdict.INCOMPATIBLE, Verdict.UNKNOWN))
            advice = ("clear the state (archive the checkpoint) and start with --fresh"
                      if verdict is Verdict.INCOMPATIBLE
                      else "a human must decide: restart with --accept UNKNOWN, or archive and start --fresh")
            raise CheckpointRefused(
                f"refusing to restart from {self.checkpoint}: verdict {verdict.value} ({reasons}); {advice}")
        return report

    def holds_state(self) -> bool:
        """Whether Spark has written anything here. A record alone (a job stopped before its
        queries started) is no state: a fresh start may replace it."""
        return any(entry.rstrip("/").rsplit("/", 1)[-1] != RECORD_DIR
                   for entry in self.storage.list(self.checkpoint))

    def record(self) -> None:
        """Store the SQL the state is now built by; each file replaced atomically."""
        self.storage.mkdirs(self.record_dir)
        self.storage.write_text(f"{self.record_dir}/job.sql", self.sql)
        signature = {**state_signature(self.model), "recorded_at": datetime.now(timezone.utc).isoformat()}
        self.storage.write_text(f"{self.record_dir}/signature.json", json.dumps(signature, indent=2))

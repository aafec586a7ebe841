"""The checkpoint guard: a job refuses to restart on state its SQL cannot reuse.

Beside Spark's own files, the checkpoint directory holds ``_stategate/job.sql`` (the SQL the state
was built by) and ``_stategate/signature.json`` (the state it implies, with the slot of every
aggregate: ``analyzer.layout``). On start the given SQL is compared with the recorded one by the
analyzer, together with whether its aggregates fit the recorded slots:

* FULL / PARTIAL → restart from the checkpoint, with the recorded slots evolved to the new SQL;
* a checkpoint of an older layout, or a change that does not fit the slots → INCOMPATIBLE;
* INCOMPATIBLE → refuse; UNKNOWN → refuse unless a human accepted it (``--accept UNKNOWN``);
* ``--fresh`` → only on a checkpoint without Spark state (at most a record): the job never
  deletes or overwrites state (archiving is the Airflow provider's job).

This protects anyone who runs the job by hand, outside the Airflow gate, too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from stategate.analyzer import JobModel, Report, Verdict, build, compare_models
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.layout import LAYOUT_V1, JobLayout, plan, watermark_of_offset_log
from stategate.analyzer.signature import state_signature
from stategate.spark_jobs import RECORD_DIR, query_dir
from stategate.spark_jobs.storage import HadoopStorage


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

    def check(self, fresh: bool = False, accept: Verdict = Verdict.PARTIAL) -> tuple[Report | None, JobLayout]:
        """Raise :class:`CheckpointRefused` unless starting is safe; the report of the change (None on
        a fresh start) and the slot layout to run with.

        ``accept`` is the worst verdict to restart on: PARTIAL by default, UNKNOWN once a human has
        decided the state is reusable. INCOMPATIBLE is never accepted."""
        if not self.holds_state():
            return None, plan(self.model)
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
        signature = self._recorded_signature()
        watermarks = {p.name: self._watermark(p.name) for p in self.model.pipelines}
        report = compare_models(old, self.model, signature, watermarks)
        verdict = report.verdict
        if verdict is Verdict.INCOMPATIBLE or verdict > accept:
            reasons = "; ".join(f"{f.rule}: {f.message}" for f in report.findings
                                if f.effect in (Verdict.INCOMPATIBLE, Verdict.UNKNOWN))
            advice = ("clear the state (archive the checkpoint) and start with --fresh"
                      if verdict is Verdict.INCOMPATIBLE
                      else "a human must decide: restart with --accept UNKNOWN, or archive and start --fresh")
            raise CheckpointRefused(
                f"refusing to restart from {self.checkpoint}: verdict {verdict.value} ({reasons}); {advice}")
        return report, plan(self.model, JobLayout.from_signature(signature), watermarks)

    def _recorded_signature(self) -> dict:
        """The recorded state signature; a record without one predates layouts (v1)."""
        path = f"{self.record_dir}/signature.json"
        if not self.storage.exists(path):
            return {"layout": LAYOUT_V1}
        return json.loads(self.storage.read_text(path))

    def _watermark(self, pipeline: str) -> int | None:
        """The watermark of the pipeline's last planned batch, from Spark's offset log."""
        offsets = f"{query_dir(self.checkpoint, pipeline)}/offsets"
        if not self.storage.exists(offsets):
            return None
        batches = [int(name) for name in (e.rstrip("/").rsplit("/", 1)[-1] for e in self.storage.list(offsets))
                   if name.isdigit()]
        if not batches:
            return None
        return watermark_of_offset_log(self.storage.read_text(f"{offsets}/{max(batches)}"))

    def holds_state(self) -> bool:
        """Whether Spark has written anything here. A record alone (a job stopped before its
        queries started) is no state: a fresh start may replace it."""
        return any(entry.rstrip("/").rsplit("/", 1)[-1] != RECORD_DIR
                   for entry in self.storage.list(self.checkpoint))

    def record(self, layout: JobLayout) -> None:
        """Store the SQL the state is now built by and its slots; each file replaced atomically."""
        self.storage.mkdirs(self.record_dir)
        self.storage.write_text(f"{self.record_dir}/job.sql", self.sql)
        signature = {**state_signature(self.model, layout), "recorded_at": datetime.now(timezone.utc).isoformat()}
        self.storage.write_text(f"{self.record_dir}/signature.json", json.dumps(signature, indent=2))

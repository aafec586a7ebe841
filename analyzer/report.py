"""Verdicts, findings and the report a compare produces, with text / JSON / Markdown renderings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import total_ordering
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # the replay module reads the model, which reads this one's verdicts
    from stategate.analyzer.replay import Replay


#: What the gate and ``stategate check`` say where no version is deployed, or no state kept:
#: nothing to compare with, the job starts fresh.
FIRST_DEPLOY = "FIRST_DEPLOY"


@total_ordering
class Verdict(Enum):
    """Outcome of a change, ordered by severity: INCOMPATIBLE > UNKNOWN > PARTIAL > FULL."""

    FULL = "FULL"
    PARTIAL = "PARTIAL"
    UNKNOWN = "UNKNOWN"
    INCOMPATIBLE = "INCOMPATIBLE"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Verdict):
            return NotImplemented
        return self.severity < other.severity

    @property
    def meaning(self) -> str:
        return {
            Verdict.FULL: "restart from the checkpoint; all state is reused",
            Verdict.PARTIAL: "restart from the checkpoint; added aggregates start from zero",
            Verdict.UNKNOWN: "cannot be decided from the SQL; a human must decide",
            Verdict.INCOMPATIBLE: "the state cannot be reused; clear it (archived) and let the new version take over",
        }[self]


#: Each verdict's rank, as the enumeration orders them (a verdict is compared once per finding).
_SEVERITY = {verdict: rank for rank, verdict in enumerate(Verdict)}


@dataclass(frozen=True)
class Finding:
    rule: str
    effect: Verdict
    message: str
    before: str = ""
    after: str = ""
    pipeline: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "effect": self.effect.value,
            "message": self.message,
            "before": self.before,
            "after": self.after,
            "pipeline": self.pipeline,
        }


@dataclass(frozen=True)
class AggregatePlan:
    """What happens to each aggregate's state on restart."""

    kept: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"kept": list(self.kept), "added": list(self.added), "dropped": list(self.dropped)}

    def cleared(self) -> AggregatePlan:
        """The plan once the state is cleared: nothing continues, every aggregate starts from zero."""
        return AggregatePlan(kept=(), added=self.kept + self.added, dropped=self.kept + self.dropped)


@dataclass(frozen=True)
class Carried:
    """The state of one pipeline that a restart carries over, as the deployed job last said.

    :param pipeline: the pipeline
    :param rows: its rows in Spark's state store: one per key and open window (per key and slice of
        a HOP or CUMULATE window)
    :param batch: the micro-batch that left them
    """

    pipeline: str
    rows: int
    batch: int

    def describe(self) -> str:
        return (f"{self.pipeline}: {self.rows:,} state row(s) (one per key and open window, or slice of one) "
                f"at micro-batch {self.batch}")

    def to_dict(self) -> dict[str, str | int]:
        return {"pipeline": self.pipeline, "state_rows": self.rows, "batch": self.batch}


@dataclass(frozen=True)
class Report:
    """The verdict's findings, what happens to each aggregate, what a restart carries over from the
    deployed state, and what a clear-state redeploy of the new version would read again
    (:mod:`analyzer.replay`)."""

    findings: tuple[Finding, ...]
    aggregates: AggregatePlan = field(default_factory=AggregatePlan)
    replay: tuple[Replay, ...] = ()
    carried: tuple[Carried, ...] = ()

    @property
    def verdict(self) -> Verdict:
        return max((f.effect for f in self.findings), default=Verdict.UNKNOWN)

    def with_findings(self, findings: Sequence[Finding]) -> Report:
        """This report with more findings; a verdict they make INCOMPATIBLE clears every aggregate."""
        report = replace(self, findings=self.findings + tuple(findings))
        if report.verdict is Verdict.INCOMPATIBLE and self.verdict is not Verdict.INCOMPATIBLE:
            report = replace(report, aggregates=self.aggregates.cleared())
        return report

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict.value,
            "findings": [f.to_dict() for f in self.findings],
            "aggregates": self.aggregates.to_dict(),
            "plan": self._plan_lines(),
            "carried": [c.to_dict() for c in self.carried],
            "replay": [r.to_dict() for r in self.replay],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        # With several pipelines each finding names its own (the sink it feeds).
        named = any(f.pipeline for f in self.findings)
        rows = [("EFFECT", "RULE", *(("PIPELINE",) if named else ()), "MESSAGE")] + [
            (f.effect.value, f.rule, *((f.pipeline or "(job)",) if named else ()), f.message)
            for f in self._ordered()
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        lines = [f"Verdict: {self.verdict.value} — {self.verdict.meaning}", ""]
        for row in rows:
            lines.append("  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths)) + "  " + row[-1])
        lines += ["", *self._plan_lines()]
        if self.carried:
            lines += ["", *self._carried_lines()]
        if self.replay:
            lines += ["", "If the state is cleared, each pipeline replays:",
                      *(f"  {r.describe()}" for r in self.replay)]
        return "\n".join(lines).rstrip() + "\n"

    def to_markdown(self) -> str:
        lines = [
            f"### State compatibility: **{self.verdict.value}**",
            "",
            f"_{self.verdict.meaning}_",
            "",
            "| effect | rule | pipeline | finding | before | after |",
            "|---|---|---|---|---|---|",
        ]
        for f in self._ordered():
            lines.append(f"| {f.effect.value} | `{f.rule}` | {_md(f.pipeline)} | {_md(f.message)} | "
                         f"{_code(f.before)} | {_code(f.after)} |")
        plan = self._plan_lines()
        if plan:
            lines += ["", "**Aggregates**", ""] + [f"- {line}" for line in plan]
        if self.carried:
            heading, *carried = self._carried_lines()
            lines += ["", f"**{heading.rstrip(':')}**", ""] + [f"- {_md(line.strip())}" for line in carried]
        if self.replay:
            lines += ["", "**If the state is cleared**", ""] + [f"- {_md(r.describe())}" for r in self.replay]
        return "\n".join(lines) + "\n"

    def _carried_lines(self) -> list[str]:
        """What a restart carries over; an added aggregate starts from zero in every one of them."""
        lines = ["A restart carries, as the deployed job last said:", *(f"  {c.describe()}" for c in self.carried)]
        if self.aggregates.added:
            lines.append(f"  {', '.join(self.aggregates.added)} start(s) from zero in each of those "
                         f"{sum(c.rows for c in self.carried):,} row(s)")
        return lines

    def _ordered(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: -f.effect.severity)

    def _plan_lines(self) -> list[str]:
        plan = self.aggregates
        if self.verdict is Verdict.INCOMPATIBLE and (plan.added or plan.dropped):
            # Every aggregate would read as both added and dropped: say what happens instead.
            return ["all state is cleared (archived first): every aggregate starts from zero, and the new "
                    "version takes over, re-reading what its open windows need (below)"]
        lines = []
        for label, items in (("kept (continue from state)", plan.kept),
                             ("added (start from zero)", plan.added),
                             ("dropped (state discarded)", plan.dropped)):
            if items:
                lines.append(f"{label}: {', '.join(items)}")
        return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{_md(text)}`" if text else ""

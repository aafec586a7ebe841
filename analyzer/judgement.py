"""The judgement of a deployed state against new SQL: whether it can restart, and on what layout.

Three callers decide a redeploy, each having read the deployed job its own way: the checkpoint
guard (the job on start, from the ``_stategate`` record beside its state), the deployment hook
(the Airflow gate, from the job root) and ``stategate check --deployed`` (through the hook). They
all hand what they read to :func:`judge` and act on its answer, so the three never disagree and
the layout is planned once per judgement:

* nothing deployed, or no state: a first deploy, fresh layout;
* state of unknown origin (no recorded SQL, or SQL that no longer parses): UNKNOWN, and no
  layout: nothing can restart on it;
* otherwise the two versions' report (:func:`analyzer.compare.compare_models`) and whether the new
  aggregates fit the state as laid out (:mod:`analyzer.layout`): the evolved layout a restart
  runs with, or the finding that says why none fits (INCOMPATIBLE: the state must be cleared).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from stategate.analyzer.build import build
from stategate.analyzer.compare import compare_models
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.layout import LAYOUT, JobLayout, NoRoom, outgrown, plan
from stategate.analyzer.model import JobModel
from stategate.analyzer.reseed import not_reseedable, reseedable
from stategate.analyzer.report import Carried, Finding, Report, Verdict
from stategate.analyzer.settings import reseeds_partitions

#: Rule ids of the judgement's own findings.
NO_RECORD, RECORD_UNREADABLE = "stategate.no-record", "stategate.record-unreadable"
LAYOUT_OLD, LAYOUT_NO_ROOM, LAYOUT_RESEED = "stategate.layout.old", "stategate.layout.no-room", "stategate.layout.reseed"
LAYOUT_OUTGROWN = "stategate.layout.outgrown"


@dataclass(frozen=True)
class Deployed:
    """What a deployed job left, as its caller read it.

    :param model: the model of the SQL the state was built by; None where that is unknown
    :param signature: the state layout recorded with the state (``analyzer.signature``); None or
        ``{}``: none recorded, a state from before layouts
    :param watermarks: each pipeline's watermark in the checkpoint (which retired slots are free)
    :param holds_state: whether Spark's state is there at all
    :param unknown: why ``model`` is unknown, as the finding the report carries
    :param carried: what each pipeline's state holds, as the deployed job last said
    """

    model: JobModel | None
    signature: Mapping[str, Any] | None = None
    watermarks: Mapping[str, int | None] = field(default_factory=dict)
    holds_state: bool = True
    unknown: Finding | None = None
    carried: tuple[Carried, ...] = ()

    @classmethod
    def recorded(cls, sql: str | None, source: str, signature: Mapping[str, Any] | None,
                 watermarks: Mapping[str, int | None], holds_state: bool = True,
                 missing: str = "the SQL that built it is unknown", carried: tuple[Carried, ...] = ()) -> Deployed:
        """From the recorded SQL text (None: no record; ``missing`` says where it was looked for).
        A record that no longer parses is judged as state of unknown origin, with the parser's error."""
        if sql is None:
            return cls(None, signature, watermarks, holds_state, Finding(NO_RECORD, Verdict.UNKNOWN, missing), carried)
        try:
            return cls(build(sql, source=source), signature, watermarks, holds_state, carried=carried)
        except SQLModelError as error:
            return cls(None, signature, watermarks, holds_state,
                       Finding(RECORD_UNREADABLE, Verdict.UNKNOWN, f"the deployed SQL no longer parses: {error}"),
                       carried)


@dataclass(frozen=True)
class Judgement:
    """The answer for a redeploy.

    :param report: the change's report; None for a first deploy (nothing deployed, or no state)
    :param layout: the layout the new version runs with: the deployed one evolved on a restart, a
        fresh one on a first deploy; None where the state cannot be restarted (its report says why)
    :param first_deploy: why there is nothing to compare with
    """

    report: Report | None
    layout: JobLayout | None
    first_deploy: str = ""

    @property
    def verdict(self) -> Verdict | None:
        return self.report.verdict if self.report is not None else None


def judge(new: JobModel, deployed: Deployed | None) -> Judgement:
    """The new SQL's model against what is deployed: the report, and the layout a restart runs with."""
    if deployed is None:
        return Judgement(None, plan(new), "no deployed version")
    if not deployed.holds_state:
        return Judgement(None, plan(new), "the deployed version holds no state")
    if deployed.model is None:
        assert deployed.unknown is not None, "a deployed state without a model says why"
        return Judgement(Report((deployed.unknown,)), None)
    report = compare_models(deployed.model, new)
    layout, findings = _layout(new, JobLayout.from_signature(deployed.signature or {}), deployed.watermarks,
                               reseedable(new) if reseeds_partitions(deployed.model, new) else frozenset())
    report = report.with_findings(findings)
    if layout is not None and report.verdict is not Verdict.INCOMPATIBLE:  # a restart carries the state
        report = replace(report, carried=deployed.carried)
    return Judgement(report, layout)


def _layout(new: JobModel, deployed: JobLayout, watermarks: Mapping[str, int | None],
            repartitioned: frozenset[str]) -> tuple[JobLayout | None, list[Finding]]:
    """The deployed layout evolved to the new SQL's aggregates, or the finding that says why the
    state as laid out cannot take them. The ``repartitioned`` pipelines re-seed whatever their
    aggregates (their own finding, ``stategate.setting.parallelism.reseeded``, says why)."""
    if deployed.name != LAYOUT:
        return None, [Finding(LAYOUT_OLD, Verdict.INCOMPATIBLE,
                              f"the state was written with layout {deployed.name}; this stategate reads "
                              f"{LAYOUT} only: archive the checkpoint and start fresh (nothing was deleted)",
                              deployed.name, LAYOUT)]
    try:
        layout = plan(new, deployed, watermarks, repartitioned)
    except NoRoom as error:
        pipeline = new.pipeline_named.get(error.pipeline or "")
        unseedable = error.unseedable or (not_reseedable(new, pipeline) if pipeline is not None else None)
        why = f" (its state cannot be re-seeded: {unseedable})" if unseedable else ""
        return None, [Finding(LAYOUT_NO_ROOM, Verdict.INCOMPATIBLE,
                              f"the change does not fit the recorded state layout: {error}{why}; clear the state "
                              "(a fresh start sizes the buffer anew; SET 'stategate.state.slots' leaves room)",
                              pipeline=error.pipeline or "")]
    reseeds = [Finding(LAYOUT_RESEED, Verdict.FULL,
                       "the aggregates do not fit the recorded state layout, so the restart re-seeds: it "
                       "archives the old state inside the checkpoint, carries its open windows into a new "
                       "layout (kept aggregates go on, added ones start from zero) and reads the source from "
                       "where the old version stopped", pipeline=name)
               for name in sorted(layout.reseeded - repartitioned)]
    return layout, reseeds + [
        Finding(LAYOUT_OUTGROWN, Verdict.UNKNOWN,
                "a STDDEV or VARIANCE of a DECIMAL of more than 16 digits keeps its sums in a slot an earlier "
                "release recorded exact, in 38 digits at the DECIMAL's scale and at twice it, which its values' "
                "squares or sums can pass (a DECIMAL(38, 18)'s square from 10 up, a DECIMAL(19, 19)'s sum of "
                "squares from 1, the sum of two DECIMAL(38, 18)s of 6 * 10^19): such a value stops the job or "
                "leaves its window's result wrong; its state cannot be re-seeded into a slot that keeps them "
                f"({not_reseedable(new, new.pipeline_named[name])}): clear the state to take them, or restart "
                "to go on as before", pipeline=name)
        for name in outgrown(new, layout)]

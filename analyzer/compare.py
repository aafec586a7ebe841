"""``compare(old_sql, new_sql)``: match pipelines, apply the seed rule set that fits each, report."""

from __future__ import annotations

from dataclasses import replace
from itertools import zip_longest

from stategate.analyzer.build import build
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import IntervalJoin, JobModel, Pipeline, WindowAggregate, WindowJoin, WindowOperator
from stategate.analyzer.replay import replays
from stategate.analyzer.report import AggregatePlan, Finding, Report, Verdict
from stategate.analyzer.rules import coverage, group_window, shared, window_topn, window_tvf
from stategate.analyzer.rules.shared import FULL, UNKNOWN, Change
from stategate.analyzer.stack import deep


@deep
def compare(old_sql: str, new_sql: str, *, old_source: str = "old", new_source: str = "new") -> Report:
    """Compare two versions of a job script. Raises :class:`SQLModelError` on invalid SQL."""
    return compare_models(build(old_sql, old_source), build(new_sql, new_source))


@deep
def compare_models(old: JobModel, new: JobModel) -> Report:
    """Compare two job models. Whether a deployed state, as laid out, can take the new one is the
    judgement's (:func:`analyzer.judgement.judge`)."""
    try:
        return _compare_models(old, new)
    except RecursionError:
        raise SQLModelError("an expression nests too deeply to compare (an operator chain of tens of "
                            "thousands)", source=new.source) from None


def _compare_models(old: JobModel, new: JobModel) -> Report:
    findings: list[Finding] = []
    plans: list[tuple[str, AggregatePlan]] = []
    pairs, unmatched = _match(old, new)
    findings += unmatched
    for old_p, new_p in pairs:
        pipeline_findings, plan = _compare_pipeline(Change(old_p, new_p, old, new))
        findings += [_tag(f, old_p.name if len(pairs) > 1 else "") for f in pipeline_findings]
        plans.append((old_p.name, plan))
    findings += coverage.settings(old, new)
    if not pairs and not unmatched:
        findings.append(Finding("stategate.no-pipeline", UNKNOWN,
                                "neither script has an INSERT INTO or SELECT to compare"))
    report = Report(tuple(findings))
    return Report(tuple(findings), _merge_plans(plans, report.verdict, len(plans) > 1), replays(old, new))


def _match(old: JobModel, new: JobModel) -> tuple[list[tuple[Pipeline, Pipeline]], list[Finding]]:
    """Pipelines match by sink table; bare SELECTs match by position."""
    pairs: list[tuple[Pipeline, Pipeline]] = []
    findings: list[Finding] = []
    old_by_name = {p.name: p for p in old.pipelines}
    new_by_name = {p.name: p for p in new.pipelines}
    if len(old.pipelines) == len(new.pipelines) == 1 and old.pipelines[0].sink is None \
            and new.pipelines[0].sink is None:
        return [(old.pipelines[0], new.pipelines[0])], []
    for name, pipeline in old_by_name.items():
        if name in new_by_name:
            pairs.append((pipeline, new_by_name[name]))
        else:
            findings.append(Finding("stategate.pipeline.removed", UNKNOWN,
                                    f"pipeline {name} has no counterpart in the new SQL (was its sink renamed?)",
                                    _first_line(pipeline.written), "", name))
    for name, pipeline in new_by_name.items():
        if name not in old_by_name:
            findings.append(Finding("stategate.pipeline.added", UNKNOWN,
                                    f"pipeline {name} is new: it has no checkpointed state to match",
                                    "", _first_line(pipeline.written), name))
    return pairs, findings


def _unchanged(change: Change) -> bool:
    """The same query text, reading the same declarations (wherever they sit in the script)."""
    old, new = change.old_model, change.new_model

    def tables(model: JobModel) -> dict:
        return {name: replace(table, line=None) for name, table in model.tables.items()}

    return " ".join(change.old.written.split()) == " ".join(change.new.written.split()) \
        and tables(old) == tables(new) and old.views == new.views and old.functions == new.functions \
        and old.settings == new.settings


def _first_line(text: str) -> str:
    """A clause on one line, cut to 100 characters (an ellipsis says where)."""
    line = " ".join(text.split())
    return line if len(line) <= 100 else line[:99] + "…"


def _compare_pipeline(change: Change) -> tuple[list[Finding], AggregatePlan]:
    old, new = change.old, change.new
    if old.aggregate is None or new.aggregate is None:
        if old.aggregate is None and new.aggregate is None:
            if _unchanged(change):
                return [Finding("stategate.unchanged", FULL,
                                "the query and every table, view, function and setting it can read are "
                                "unchanged: whatever state it keeps is as it was")], AggregatePlan()
            if _ranks_rows(old) or _ranks_rows(new):
                return window_topn.check_ranked_rows(change) or [Finding(
                    "stategate.unchanged", FULL, "the window, the rows ranked and the ranking are unchanged: "
                    "a state-neutral edit")], AggregatePlan()
            if old.joins or new.joins:
                return _joins(change) or [Finding(
                    "stategate.join.unchanged", FULL, "the joins and every window aggregation they join are "
                    "unchanged: the change is after them, in what the query makes of the joined rows")], \
                    AggregatePlan()
            return [Finding("stategate.no-window-aggregation", UNKNOWN,
                            "no window aggregation in this query: the state it may keep (a deduplication, "
                            "a Top-N, ...) is outside the window rules",
                            _first_line(old.written), _first_line(new.written))], AggregatePlan()
        return [Finding("stategate.aggregation.added-or-removed", Verdict.INCOMPATIBLE,
                        "the query gained or lost its aggregation",
                        _first_line(old.written), _first_line(new.written))], AggregatePlan()
    findings = _rules_for(change)
    if change.old_agg.window is None and change.new_agg.window is None \
            and not (change.old_agg.per_window and change.new_agg.per_window):
        findings.append(Finding("stategate.no-window", UNKNOWN,
                                "GROUP BY without a window: an unbounded aggregation is outside the window rules",
                                _first_line(old.written), _first_line(new.written)))
    findings += coverage.check(change)
    findings += _upstream(change)
    findings += _joins(change)
    if not findings:
        findings.append(Finding("stategate.unchanged", FULL,
                                "window, group keys and aggregates are unchanged: a state-neutral edit"))
    return _cap_beside_user_functions(findings), _plan(change)


def _plan(change: Change) -> AggregatePlan:
    """What happens to every stage's aggregates: the outer window's named as they are, a cascaded or
    joined stage's after the stage (as its findings are), so a PARTIAL names each aggregate that
    starts from zero wherever it is. Stages pair in order; where the shapes differ the change is
    INCOMPATIBLE and the plan is reset anyway."""
    kept: list[str] = []
    added: list[str] = []
    dropped: list[str] = []
    for (label, old), (_, new) in zip(_labelled_stages(change.old), _labelled_stages(change.new)):
        stage = shared.aggregate_plan(old.aggregates, new.aggregates)
        prefix = f"{label}: " if label else ""
        kept += (prefix + a for a in stage.kept)
        added += (prefix + a for a in stage.added)
        dropped += (prefix + a for a in stage.dropped)
    return AggregatePlan(tuple(kept), tuple(added), tuple(dropped))


def _labelled_stages(pipeline: Pipeline) -> list[tuple[str, WindowAggregate]]:
    """:meth:`Pipeline.stages`, each named as the findings about it are."""
    assert pipeline.aggregate is not None
    main = pipeline.aggregate.chain()
    stages = [("" if depth == 0 else "upstream window" + (f" {depth}" if depth > 1 else ""), stage)
              for depth, stage in enumerate(main)]
    for index, joined in enumerate(pipeline.joined, start=1):
        stages += [(f"joined window {index}" + (" upstream" * depth), stage)
                   for depth, stage in enumerate(joined.chain())]
    return stages


def _cap_beside_user_functions(findings: list[Finding]) -> list[Finding]:
    """Beside a UDAF or UDTF the seeds declare the outcome UNKNOWN whatever else changed.

    Lineage stops at a user function, so structural findings around it cannot be trusted either
    way; they are kept for the human who decides, at UNKNOWN.
    """
    if not any(f.rule.endswith((".udaf", ".udtf")) for f in findings):
        return findings
    return [
        Finding(f.rule, UNKNOWN, f"{f.message} (undecidable beside a user-defined function)",
                f.before, f.after, f.pipeline)
        if f.effect is Verdict.INCOMPATIBLE else f
        for f in findings
    ]


def _ranks_rows(pipeline: Pipeline) -> bool:
    """A window Top-N reading a window TVF directly (no aggregation between them)."""
    return pipeline.topn is not None and pipeline.topn.rows is not None


def _rules_for(change: Change) -> list[Finding]:
    if change.old.topn is not None or change.new.topn is not None:
        return window_topn.check(change)
    operators = {w.operator for w in (change.old_agg.window, change.new_agg.window) if w is not None}
    if WindowOperator.GROUP in operators:
        return group_window.check(change)
    return window_tvf.check(change)


def _upstream(change: Change) -> list[Finding]:
    """A cascaded window aggregation: the aggregation feeding this one has state of its own."""
    old_src, new_src = change.old_agg.source, change.new_agg.source
    if not isinstance(old_src, WindowAggregate) and not isinstance(new_src, WindowAggregate):
        return []
    if not (isinstance(old_src, WindowAggregate) and isinstance(new_src, WindowAggregate)):
        return [Finding("stategate.cascade.changed", Verdict.INCOMPATIBLE,
                        "a cascaded window aggregation was added or removed upstream")]
    upstream = Change(_as_pipeline(change.old, old_src), _as_pipeline(change.new, new_src),
                      change.old_model, change.new_model)
    findings, _ = _compare_pipeline(upstream)
    return [_tag(f, "upstream window") for f in findings if f.rule != "stategate.unchanged"]


def _joins(change: Change) -> list[Finding]:
    """The joins of a changed query: each an operator with state no seed rule covers (UNKNOWN, named),
    and each window aggregation in a joined branch judged by its own rules, so that a change the
    rules call INCOMPATIBLE stays INCOMPATIBLE beside the join. Branches match in query order."""
    old, new = change.old, change.new
    if not (old.joins or new.joins) or _unchanged(change):
        return []
    findings = []
    if old.join is None or new.join is None or _join_key(old.join) != _join_key(new.join):
        kind = _JOIN_KINDS.get(type(new.join or old.join), "join")
        findings.append(Finding(
            "stategate.join", UNKNOWN,
            f"the query's {kind} ({'; '.join(_first_line(j) for j in new.joins or old.joins)}) changed: no rule covers "
            "the state of a join, so a human decides whether it can be reused",
            "; ".join(map(_first_line, old.joins)), "; ".join(map(_first_line, new.joins))))
    for index, (old_agg, new_agg) in enumerate(zip_longest(old.joined, new.joined)):
        label = f"joined window {index + 1}"
        if old_agg is None or new_agg is None:
            findings.append(Finding("stategate.aggregation.added-or-removed", Verdict.INCOMPATIBLE,
                                    "a joined branch gained or lost its window aggregation",
                                    _first_line(old_agg.written if old_agg else ""),
                                    _first_line(new_agg.written if new_agg else ""), label))
            continue
        if old_agg == new_agg:  # the same model: the same state
            continue
        branch, _ = _compare_pipeline(Change(_as_pipeline(old, old_agg), _as_pipeline(new, new_agg),
                                             change.old_model, change.new_model))
        findings += [_tag(f, label) for f in branch if f.rule != "stategate.unchanged"]
    return findings


_JOIN_KINDS = {WindowJoin: "window join", IntervalJoin: "interval join"}


def _join_key(join: WindowJoin | IntervalJoin) -> tuple:
    """What a join's state depends on: its kind, condition, and the rows its inputs give it (a
    projection after the join is not part of it). A join the model does not tell apart has none."""
    def rows(outputs) -> tuple:
        return tuple((o.name, o.value.key) for o in outputs)

    if isinstance(join, WindowJoin):
        return (WindowJoin, join.kinds, tuple(c.key for c in join.conditions), tuple(f.key for f in join.filters),
                tuple((b.alias, rows(b.aggregate.outputs)) for b in join.branches))
    stream = join.stream
    return (IntervalJoin, join.condition.key, stream.alias, stream.table, tuple(f.key for f in stream.filters),
            rows(stream.columns), join.window.alias, rows(join.window.aggregate.outputs), join.time, join.bound,
            join.lower_ms, join.upper_ms)


def _as_pipeline(pipeline: Pipeline, aggregate: WindowAggregate) -> Pipeline:
    return Pipeline(name=f"{pipeline.name} (upstream)", sink=None, aggregate=aggregate, topn=None,
                    outputs=aggregate.outputs, written=aggregate.written)


def _tag(finding: Finding, pipeline: str) -> Finding:
    if not pipeline or finding.pipeline:
        return finding
    return Finding(finding.rule, finding.effect, finding.message, finding.before, finding.after, pipeline)


def _merge_plans(plans: list[tuple[str, AggregatePlan]], verdict: Verdict, qualify: bool) -> AggregatePlan:
    def names(name: str, items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{name}: {i}" for i in items) if qualify else items

    merged = AggregatePlan(tuple(k for n, p in plans for k in names(n, p.kept)),
                           tuple(a for n, p in plans for a in names(n, p.added)),
                           tuple(d for n, p in plans for d in names(n, p.dropped)))
    return merged.cleared() if verdict is Verdict.INCOMPATIBLE else merged

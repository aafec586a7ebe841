"""Checks shared by the seed rule sets; each seed module composes them with its own rule ids.

A check (:data:`Check`) compares one part of two versions of a pipeline and returns findings; each
seed module lists its checks in a tuple (``CHECKS``) and :func:`run` applies them. Rule ids are
``<prefix>.<part>.<change>`` where the prefix names the seed document the effect comes from
(``group-window`` = seed 000, ``window-tvf`` = 001, ``window-topn`` = 002) or ``stategate`` for
stategate's own rules where the seeds are silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from stategate.analyzer.model import Aggregate, JobModel, Pipeline, Role, Window, WindowAggregate
from stategate.analyzer.windows import format_ms
from stategate.analyzer.report import AggregatePlan, Finding, Verdict

FULL, PARTIAL, UNKNOWN, INCOMPATIBLE = Verdict.FULL, Verdict.PARTIAL, Verdict.UNKNOWN, Verdict.INCOMPATIBLE


@dataclass(frozen=True)
class Change:
    """Two versions of one pipeline, with the scripts they come from."""

    old: Pipeline
    new: Pipeline
    old_model: JobModel
    new_model: JobModel

    @property
    def old_agg(self) -> WindowAggregate:
        assert self.old.aggregate is not None
        return self.old.aggregate

    @property
    def new_agg(self) -> WindowAggregate:
        assert self.new.aggregate is not None
        return self.new.aggregate


#: One rule of a seed document: the rule-id prefix and the change → its findings.
Check = Callable[[str, Change], list[Finding]]


def run(prefix: str, checks: Sequence[Check], change: Change) -> list[Finding]:
    """The findings of every check, in the order the seed document lists them."""
    return [finding for check in checks for finding in check(prefix, change)]


def _list(items: Iterable[str]) -> str:
    return ", ".join(items) or "(none)"


# ---------------------------------------------------------------------------- window definition
def window_definition(prefix: str, change: Change) -> list[Finding]:
    """Type, size, slide, gap, offset, time attribute, partition keys: fixed parts of the state."""
    return windows(prefix, change.old_agg.window, change.new_agg.window)


def windows(prefix: str, old: Window | None, new: Window | None) -> list[Finding]:
    """:func:`window_definition` of two windows, whichever operator keeps them."""
    if old is None or new is None:
        if old is new:
            return []
        return [Finding(f"{prefix}.window.added-or-removed", INCOMPATIBLE,
                        "a window aggregation was turned into a non-window one or back",
                        old.written if old else "(no window)", new.written if new else "(no window)")]
    findings = []
    before, after = old.written, new.written
    if old.operator != new.operator:
        findings.append(Finding(
            f"{prefix}.window.operator", INCOMPATIBLE,
            f"the window operator changed from {old.operator.described} to {new.operator.described}", before, after))
    if old.kind != new.kind:
        findings.append(Finding(f"{prefix}.window.type", INCOMPATIBLE,
                                f"window type changed from {old.kind} to {new.kind}", before, after))
    else:
        for (label, a), (_, b) in zip(old.shape.arguments(), new.shape.arguments()):
            if a != b:
                findings.append(Finding(
                    f"{prefix}.window.{label}", INCOMPATIBLE,
                    f"window {label} changed from {_ms(a)} to {_ms(b)}", before, after))
    if old.time_attr.key != new.time_attr.key or old.time_kind != new.time_kind:
        if (old.time_attr.written, old.time_kind) == (new.time_attr.written, new.time_kind):
            # Same name, different computation (a computed rowtime, or a view's column).
            message = (f"time attribute {new.time_attr.written} ({new.time_kind.value}) is computed differently: "
                       f"{old.time_attr.key} before, {new.time_attr.key} now")
        else:
            message = (f"time attribute changed from {old.time_attr.written} ({old.time_kind.value}) "
                       f"to {new.time_attr.written} ({new.time_kind.value})")
        findings.append(Finding(f"{prefix}.window.time-attribute", INCOMPATIBLE, message,
                                old.time_attr.written, new.time_attr.written))
    old_p = [k.key for k in old.partition_keys]
    new_p = [k.key for k in new.partition_keys]
    if old_p != new_p:
        findings.append(Finding(
            f"{prefix}.window.partition-keys", INCOMPATIBLE,
            f"window PARTITION BY changed from [{_list(old_p)}] to [{_list(new_p)}]", before, after))
    return findings


def _ms(value: int | None) -> str:
    return "none" if value is None else format_ms(value)


# ---------------------------------------------------------------------------- group keys
def group_keys(prefix: str, change: Change, *, window_reorder: Verdict, window_fields_rule: bool) -> list[Finding]:
    """Non-window keys are fixed in content and order; the window key's position is ``window_reorder``.
    A seed module binds the two keywords (``functools.partial``) to make it a :data:`Check`."""
    old, new = change.old_agg.group_keys, change.new_agg.group_keys
    findings = []
    old_plain = [k.value.key for k in old if not k.is_window]
    new_plain = [k.value.key for k in new if not k.is_window]
    written = {k.value.key: k.value.written for k in (*old, *new)}
    before = ", ".join(k.value.written for k in old)
    after = ", ".join(k.value.written for k in new)
    added = [k for k in new_plain if k not in old_plain]
    removed = [k for k in old_plain if k not in new_plain]
    if added or removed:
        parts = []
        if added:
            parts.append("added " + _list(written[k] for k in added))
        if removed:
            parts.append("removed " + _list(written[k] for k in removed))
        findings.append(Finding(f"{prefix}.group-key.changed", INCOMPATIBLE,
                                "GROUP BY keys changed: " + "; ".join(parts)
                                + " (a changed computation counts as removed + added)", before, after))
    elif old_plain != new_plain:
        findings.append(Finding(f"{prefix}.group-key.reordered", INCOMPATIBLE,
                                "non-window GROUP BY keys were reordered", before, after))
    old_window = [k.window_field for k in old if k.window_field is not None]
    new_window = [k.window_field for k in new if k.window_field is not None]
    if window_fields_rule and set(old_window) != set(new_window):
        findings.append(Finding(
            f"{prefix}.group-key.window-fields", INCOMPATIBLE,
            f"GROUP BY window attributes changed from [{_list(old_window)}] to [{_list(new_window)}]",
            before, after))
    elif not findings and [k.value.key for k in old] != [k.value.key for k in new]:
        effect = window_reorder
        findings.append(Finding(
            f"{prefix}.group-key.window-moved", effect,
            "only the position of the window key(s) in GROUP BY changed"
            + (" (other keys keep their order)" if effect is FULL else ""), before, after))
    return findings


# ---------------------------------------------------------------------------- aggregates
def aggregate_plan(old: Sequence[Aggregate], new: Sequence[Aggregate]) -> AggregatePlan:
    old_ids = [a.identity for a in old]
    new_ids = [a.identity for a in new]
    return AggregatePlan(
        kept=tuple(i for i in new_ids if i in old_ids),
        added=tuple(i for i in new_ids if i not in old_ids),
        dropped=tuple(i for i in old_ids if i not in new_ids),
    )


def aggregates(prefix: str, change: Change) -> list[Finding]:
    """Seeds 000/001: non-distinct aggregates are flexible, distinct ones and the empty set are not."""
    old, new = change.old_agg.aggregates, change.new_agg.aggregates
    findings: list[Finding] = []
    before, after = _aggs(old), _aggs(new)
    old_d = {a.identity for a in old if a.distinct}
    new_d = {a.identity for a in new if a.distinct}
    if old_d != new_d:
        findings.append(Finding(
            f"{prefix}.aggregate.distinct-changed", INCOMPATIBLE,
            "distinct aggregates changed: "
            + _delta(sorted(new_d - old_d), sorted(old_d - new_d)), before, after))
    if not old and not new:
        return [Finding(f"{prefix}.aggregate.none", FULL, "no aggregates before or after the change")]
    if old and not new:
        return findings + [Finding(f"{prefix}.aggregate.all-deleted", INCOMPATIBLE,
                                   "all aggregates were deleted", before, "(none)")]
    if new and not old:
        return findings + [Finding(f"{prefix}.aggregate.added-to-none", INCOMPATIBLE,
                                   "aggregates were added to a query that had none", "(none)", after)]
    plan = aggregate_plan(old, new)
    if not plan.kept:
        single = len(old) == 1 and len(new) == 1
        message = (f"the only aggregate changed its calculation: {old[0].written} -> {new[0].written}"
                   if single else "the set of aggregates changed entirely; no aggregate state is reused")
        rule = "aggregate.only-one-modified" if single else "aggregate.no-overlap"
        return findings + [Finding(f"{prefix}.{rule}", INCOMPATIBLE, message, before, after)]
    by_id = {a.identity: a for a in (*old, *new)}
    old_names = _output_names(change.old_agg)
    new_names = _output_names(change.new_agg)
    modified = {
        o: n for o in plan.dropped for n in plan.added
        if old_names.get(o) and old_names.get(o) == new_names.get(n)
        and not by_id[o].distinct and not by_id[n].distinct
    }
    for o, n in modified.items():
        findings.append(Finding(
            f"{prefix}.aggregate.modified", PARTIAL,
            f"aggregate {old_names[o]!s} changed: state of {o} is discarded, {n} starts from zero",
            by_id[o].written, by_id[n].written))
    for n in plan.added:
        if n not in modified.values() and not by_id[n].distinct:
            findings.append(Finding(f"{prefix}.aggregate.added", PARTIAL,
                                    f"aggregate {n} added: it starts from zero", "", by_id[n].written))
    for o in plan.dropped:
        if o not in modified and not by_id[o].distinct:
            findings.append(Finding(f"{prefix}.aggregate.deleted", FULL,
                                    f"aggregate {o} deleted: its state is discarded", by_id[o].written, ""))
    if not plan.added and not plan.dropped and [a.identity for a in old] != [a.identity for a in new]:
        findings.append(Finding(f"{prefix}.aggregate.reordered", FULL,
                                "aggregates were reordered; each keeps its state", before, after))
    return findings


def _output_names(aggregate: WindowAggregate) -> dict[str, str]:
    """Aggregate identity -> the output column that shows it (to pair a modified aggregate)."""
    by_key: dict[str, list[str]] = {}
    for agg in aggregate.aggregates:
        by_key.setdefault(agg.expr_key, []).append(agg.identity)
    return {identity: output.name for output in aggregate.outputs
            for identity in by_key.get(output.value.key, ())}


def _aggs(aggs: Sequence[Aggregate]) -> str:
    return ", ".join(a.written for a in aggs) or "(none)"


def _delta(added: Sequence[str], removed: Sequence[str]) -> str:
    parts = []
    if added:
        parts.append("added " + _list(added))
    if removed:
        parts.append("removed " + _list(removed))
    return "; ".join(parts) or "modified"


def window_outputs(prefix: str, change: Change) -> list[Finding]:
    old, new = change.old_agg, change.new_agg
    old_w = [o.name for o in old.outputs if o.role is Role.WINDOW]
    new_w = [o.name for o in new.outputs if o.role is Role.WINDOW]
    if sorted(old_w) == sorted(new_w):
        return []
    return [Finding(f"{prefix}.window-attribute-output", FULL,
                    f"window attribute outputs changed from [{_list(old_w)}] to [{_list(new_w)}]; "
                    "they are computed on emit, not stored", _list(old_w), _list(new_w))]


# ---------------------------------------------------------------------------- emit and UDAFs
def emit_settings(prefix: str, change: Change) -> list[Finding]:
    old, new = change.old_model.emit_settings(), change.new_model.emit_settings()
    before = _settings(old)
    after = _settings(new)
    findings = []
    if old != new:
        findings.append(Finding(f"{prefix}.emit.changed", INCOMPATIBLE,
                                "early-fire / late-fire settings were added, removed or changed",
                                before, after))
    if change.old_model.emit_enabled() or change.new_model.emit_enabled():
        findings.append(Finding(f"{prefix}.emit.enabled", INCOMPATIBLE,
                                "early-fire or late-fire is enabled before or after the change",
                                before, after))
    return findings


def _settings(settings: dict[str, str]) -> str:
    return "; ".join(f"SET '{k}' = '{v}'" for k, v in sorted(settings.items())) or "(none)"


def user_defined_aggregates(prefix: str, change: Change) -> list[Finding]:
    findings = []
    for side, agg in (("before", change.old.aggregate), ("after", change.new.aggregate)):
        aggregates = [a for stage in (agg.chain() if agg else ()) for a in stage.aggregates]
        for udaf in (a for a in aggregates if a.user_defined):
            language = udaf.language or "undeclared"
            kind = "Python UDAF" if language == "PYTHON" else f"user-defined aggregate ({language.lower()})"
            findings.append(Finding(
                f"{prefix}.udaf", UNKNOWN,
                f"{kind} {udaf.function} present {side} the change: its accumulator's compatibility "
                "cannot be checked", udaf.written if side == "before" else "",
                udaf.written if side == "after" else ""))
    return findings

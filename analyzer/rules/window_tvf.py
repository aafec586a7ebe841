"""Seed 001: window TVF aggregation (``TABLE(TUMBLE(...)) ... GROUP BY window_start, window_end``)."""

from __future__ import annotations

from functools import partial

from stategate.analyzer.model import ClauseKind, WindowAggregate
from stategate.analyzer.report import Finding
from stategate.analyzer.rules import shared
from stategate.analyzer.rules.shared import FULL, INCOMPATIBLE, UNKNOWN, Change, Check

PREFIX = "window-tvf"


def check(change: Change) -> list[Finding]:
    return shared.run(PREFIX, CHECKS, change)


def between_clauses(prefix: str, change: Change) -> list[Finding]:
    """Calculations and filters on window attributes between the TVF and the GROUP BY."""
    old, new = change.old_agg, change.new_agg
    findings = []
    old_calc = [c.value.written for c in old.between if c.kind is ClauseKind.CALCULATION]
    new_calc = [c.value.written for c in new.between if c.kind is ClauseKind.CALCULATION]
    if bool(old_calc) != bool(new_calc):
        findings.append(Finding(
            f"{prefix}.field-calculation.added-or-removed", INCOMPATIBLE,
            "a field calculation on window attributes between the window TVF and GROUP BY was "
            + ("added" if new_calc else "removed"), "; ".join(old_calc), "; ".join(new_calc)))
    elif old_calc:
        findings.append(Finding(
            f"{prefix}.field-calculation.present", UNKNOWN,
            "a field calculation on window attributes sits between the window TVF and GROUP BY "
            "before and after the change", "; ".join(old_calc), "; ".join(new_calc)))
    old_f = [c.value.written for c in old.between if c.kind is ClauseKind.FILTER]
    new_f = [c.value.written for c in new.between if c.kind is ClauseKind.FILTER]
    if old_f or new_f:
        findings.append(Finding(
            f"{prefix}.window-filter", UNKNOWN,
            "a filter on window attributes (window_start/window_end/window_time) is added, "
            "deleted or kept", "; ".join(old_f), "; ".join(new_f)))
    return findings


def grouping_sets(prefix: str, change: Change) -> list[Finding]:
    old, new = change.old_agg, change.new_agg
    had, has = old.grouping_sets is not None, new.grouping_sets is not None
    if had != has:
        return [Finding(f"{prefix}.grouping-sets.added-or-removed", INCOMPATIBLE,
                        "GROUPING SETS / ROLLUP / CUBE was " + ("added" if has else "removed"),
                        _sets(old), _sets(new))]
    if had:
        return [Finding(f"{prefix}.grouping-sets.present", UNKNOWN,
                        "GROUPING SETS / ROLLUP / CUBE present before and after the change",
                        _sets(old), _sets(new))]
    return []


def _sets(agg: WindowAggregate) -> str:
    if agg.grouping_sets is None:
        return "(none)"
    return "GROUPING SETS (" + ", ".join(
        "(" + ", ".join(k.written for k in s) + ")" for s in agg.grouping_sets) + ")"


def udtfs(prefix: str, change: Change) -> list[Finding]:
    before = [u for stage in change.old_agg.chain() for u in stage.udtfs]
    after = [u for stage in change.new_agg.chain() for u in stage.udtfs]
    if not before and not after:
        return []
    return [Finding(f"{prefix}.udtf", UNKNOWN,
                    "a user-defined table function (LATERAL TABLE) is added, deleted or kept",
                    ", ".join(before), ", ".join(after))]


def window_field_aggregates(prefix: str, change: Change) -> list[Finding]:
    before = [a.written for a in change.old_agg.aggregates if a.on_window_field]
    after = [a.written for a in change.new_agg.aggregates if a.on_window_field]
    if not before and not after:
        return []
    return [Finding(f"{prefix}.aggregate-on-window-field", UNKNOWN,
                    "an aggregate over window_start / window_end / window_time is added, deleted or kept",
                    ", ".join(before), ", ".join(after))]


#: Seed 001's rules, in the order its report lists them. Seed 000 (legacy group windows) and seed
#: 002 (Top-N) share the runs :data:`STATE` and :data:`CLAUSES` with it.
STATE: tuple[Check, ...] = (shared.emit_settings, shared.user_defined_aggregates)
CLAUSES: tuple[Check, ...] = (grouping_sets, udtfs)
CHECKS: tuple[Check, ...] = (
    shared.window_definition,
    partial(shared.group_keys, window_reorder=FULL, window_fields_rule=True),
    shared.aggregates,
    shared.window_outputs,
    *STATE,
    between_clauses,
    *CLAUSES,
    window_field_aggregates,
)

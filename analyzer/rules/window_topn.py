"""Seed 002: window Top-N (``ROW_NUMBER() OVER (PARTITION BY window_start, window_end ...) ... rk <= N``).

Both the window aggregation's rules and Top-N's apply, so far fewer edits are compatible: anything
that changes the rows fed to ROW_NUMBER (aggregates, keys in any order) breaks the ranking state.
"""

from __future__ import annotations

from functools import partial

from sqlglot import exp

from stategate.analyzer.model import RankedRows, Role
from stategate.analyzer.report import Finding
from stategate.analyzer.rules import coverage, shared, window_tvf
from stategate.analyzer.rules.shared import FULL, INCOMPATIBLE, UNKNOWN, Change, Check

PREFIX = "window-topn"


def check(change: Change) -> list[Finding]:
    old_topn, new_topn = change.old.topn, change.new.topn
    if old_topn is None or new_topn is None:
        return [Finding(f"{PREFIX}.added-or-removed", INCOMPATIBLE,
                        "a Top-N (ROW_NUMBER ... WHERE rk <= N) was " + ("added" if new_topn else "removed"),
                        old_topn.written if old_topn else "(none)", new_topn.written if new_topn else "(none)")]
    return shared.run(PREFIX, CHECKS, change)


def check_ranked_rows(change: Change) -> list[Finding]:
    """Seed 002's second form, a Top-N reading a window TVF directly: the window, the rows it keeps
    (their columns, and which rows enter) and the ranking are its state."""
    old, new = change.old.topn, change.new.topn
    old_rows, new_rows = old.rows if old else None, new.rows if new else None
    if old_rows is None or new_rows is None:
        return [Finding(f"{PREFIX}.added-or-removed", INCOMPATIBLE,
                        "a window Top-N over a window TVF's rows was added or removed",
                        old.written if old else "(none)", new.written if new else "(none)")]
    findings = shared.windows(PREFIX, old_rows.window, new_rows.window)
    findings += _ranked_input(old_rows, new_rows)
    findings += coverage.source_findings(change, old_rows.source, new_rows.source,
                                         _read_columns(old_rows) | _read_columns(new_rows))
    findings += shared.run(PREFIX, (*window_tvf.STATE, ranking, outer_outputs), change)
    return findings


def _ranked_input(old: RankedRows, new: RankedRows) -> list[Finding]:
    """The rows a window Top-N keeps: every column is state, and so is which rows enter."""
    def described(rows: RankedRows) -> tuple:
        return (tuple((o.name, o.value.key) for o in rows.columns), sorted(f.key for f in rows.filters),
                tuple((c.kind, c.value.key) for c in rows.between))

    if described(old) == described(new):
        return []
    return [Finding(f"{PREFIX}.input.changed", INCOMPATIBLE,
                    "the rows fed to the Top-N changed (their columns, how one is computed, or a filter)",
                    ", ".join(o.value.written for o in old.columns), ", ".join(o.value.written for o in new.columns))]


def _read_columns(rows: RankedRows) -> set[str]:
    return {c.name for o in rows.columns for c in o.value.expr.find_all(exp.Column) if c.table == rows.source}


def aggregate_fields(prefix: str, change: Change) -> list[Finding]:
    old = [a.identity for a in change.old_agg.aggregates]
    new = [a.identity for a in change.new_agg.aggregates]
    if old == new:
        return []
    before = ", ".join(a.written for a in change.old_agg.aggregates)
    after = ", ".join(a.written for a in change.new_agg.aggregates)
    return [Finding(f"{prefix}.aggregate.changed", INCOMPATIBLE,
                    "aggregate fields feeding the Top-N were added, removed, modified or reordered",
                    before, after)]


def ranking(prefix: str, change: Change) -> list[Finding]:
    old, new = change.old.topn, change.new.topn
    assert old is not None and new is not None
    findings = []
    old_p = [k.key for k in old.partition_keys]
    new_p = [k.key for k in new.partition_keys]
    if sorted(old_p) != sorted(new_p):
        findings.append(Finding(f"{prefix}.partition-key.changed", INCOMPATIBLE,
                                "Top-N PARTITION BY keys were added, removed or modified",
                                old.written, new.written))
    elif old_p != new_p:
        findings.append(Finding(f"{prefix}.partition-key.reordered", FULL,
                                "Top-N PARTITION BY keys were only reordered", old.written, new.written))
    old_o = [k.describe() for k in old.order_keys]
    new_o = [k.describe() for k in new.order_keys]
    if old_o != new_o:
        findings.append(Finding(f"{prefix}.order-by.changed", INCOMPATIBLE,
                                "Top-N ORDER BY fields, directions or NULL order changed: "
                                f"[{', '.join(old_o)}] -> [{', '.join(new_o)}]", old.written, new.written))
    if (old.first, old.limit) != (new.first, new.limit):
        what = f"N changed from {old.limit} to {new.limit}" if old.first == new.first == 1 else \
            f"ranks kept changed from {old.first}-{old.limit} to {new.first}-{new.limit}"
        findings.append(Finding(f"{prefix}.n.changed", INCOMPATIBLE, f"Top-N {what}", old.describe(), new.describe()))
    if sorted(f.key for f in old.filters) != sorted(f.key for f in new.filters):
        findings.append(Finding(f"{prefix}.filter.changed", UNKNOWN,
                                "a filter beside the Top-N rank (applied to the ranked rows) changed: outside "
                                "the compatibility rules", " AND ".join(f.written for f in old.filters) or "(none)",
                                " AND ".join(f.written for f in new.filters) or "(none)"))
    return findings


def outer_outputs(prefix: str, change: Change) -> list[Finding]:
    """Window attributes and the rank column in the outer SELECT are computed on emit: FULL."""
    findings = []
    for role, label in ((Role.WINDOW, "window attribute"), (Role.RANK, "rank column")):
        old = [o.name for o in change.old.outputs if o.role is role]
        new = [o.name for o in change.new.outputs if o.role is role]
        if sorted(old) != sorted(new):
            findings.append(Finding(f"{prefix}.output.{role.value}", FULL,
                                    f"{label} outputs of the Top-N changed from "
                                    f"[{', '.join(old) or '(none)'}] to [{', '.join(new) or '(none)'}]",
                                    ", ".join(old), ", ".join(new)))
    return findings


#: Seed 002's rules: the window aggregation's, stricter (keys in any order, any aggregate change),
#: then the ranking's.
CHECKS: tuple[Check, ...] = (
    shared.window_definition,
    partial(shared.group_keys, window_reorder=INCOMPATIBLE, window_fields_rule=True),
    aggregate_fields,
    *window_tvf.STATE,
    window_tvf.between_clauses,
    *window_tvf.CLAUSES,
    ranking,
    outer_outputs,
)

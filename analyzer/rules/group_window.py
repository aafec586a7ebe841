"""Seed 000: legacy group window aggregation (``GROUP BY TUMBLE(ts, ...)``).

The seed states the same flexible / fixed split as seed 001, plus early/late-fire, which only the
legacy operator supports. Constructs seed 000 does not mention (UDTFs, GROUPING SETS, aggregates on
window properties) get seed 001's effect, which is the conservative reading.
"""

from __future__ import annotations

from functools import partial

from stategate.analyzer.report import Finding
from stategate.analyzer.rules import shared, window_tvf
from stategate.analyzer.rules.shared import FULL, Change, Check

PREFIX = "group-window"

#: Seed 001's rules without the two that need a TVF: window attributes as GROUP BY keys (a group
#: window is one key) and clauses between the TVF and GROUP BY.
CHECKS: tuple[Check, ...] = (
    shared.window_definition,
    partial(shared.group_keys, window_reorder=FULL, window_fields_rule=False),
    shared.aggregates,
    shared.window_outputs,
    *window_tvf.STATE,
    *window_tvf.CLAUSES,
    window_tvf.window_field_aggregates,
)


def check(change: Change) -> list[Finding]:
    return shared.run(PREFIX, CHECKS, change)

"""Seed 000: legacy group window aggregation (``GROUP BY TUMBLE(ts, ...)``).

The seed states the same flexible / fixed split as seed 001, plus early/late-fire, which only the
legacy operator supports. Constructs seed 000 does not mention (UDTFs, GROUPING SETS, aggregates on
window properties) get seed 001's effect, which is the conservative reading.
"""

from __future__ import annotations

from stategate.analyzer.report import Finding
from stategate.analyzer.rules import shared, window_tvf
from stategate.analyzer.rules.shared import FULL, Change

PREFIX = "group-window"


def check(change: Change) -> list[Finding]:
    old, new = change.old_agg, change.new_agg
    return [
        *shared.window_definition(PREFIX, old.window, new.window),
        *shared.group_keys(PREFIX, old.group_keys, new.group_keys, window_reorder=FULL,
                           window_fields_rule=False),
        *shared.aggregates(PREFIX, change),
        *shared.window_outputs(PREFIX, old, new),
        *shared.emit_settings(PREFIX, change),
        *shared.user_defined_aggregates(PREFIX, change),
        *window_tvf.grouping_sets(PREFIX, old, new),
        *window_tvf.udtfs(PREFIX, old, new),
        *window_tvf.window_field_aggregates(PREFIX, old, new),
    ]

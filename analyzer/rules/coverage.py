"""stategate's own rules: what the seed documents are silent on, so no change passes as a silent FULL.

Row filters, source DDL, settings and constructs outside the seeds' scope are compared here. Where
the effect on state is clear (a projection after the aggregation is stateless; a column type that an
aggregate reads changes its state's type) the rule says so; everything else is UNKNOWN.
"""

from __future__ import annotations

from typing import AbstractSet as Set

from sqlglot import exp

from stategate.analyzer.aggregates import FLINK_AGGREGATES, NULL_TREATMENTS
from stategate.analyzer.layout import WIDTH_SETTINGS
from stategate.analyzer.reseed import not_reseedable
from stategate.analyzer.settings import (FLINK_TO_SPARK, ROCKSDB, SHUFFLE_PARTITIONS, STATE_STORE, ignored,
                                         reseeds_partitions, state_settings, written_as)
from stategate.analyzer.model import JobModel, Output, Pipeline, Role, Table
from stategate.analyzer.report import Finding
from stategate.analyzer.rules.shared import FULL, INCOMPATIBLE, UNKNOWN, Change

PREFIX = "stategate"

#: Settings that tune the runtime, not the state: changing them is state-neutral. (Parallelism
#: and the state backend are not: Spark fixes them in the checkpoint, :mod:`analyzer.settings`; a
#: parallelism change is carried over only by repartitioning RocksDB state.)
RUNTIME_SETTINGS = ("pipeline.name", "execution.checkpointing.", "execution.runtime-mode",
                    "table.exec.mini-batch.", "stategate.replay.")
#: What each setting a checkpoint keeps for its life is called in a finding.
_STATE_SETTINGS = {SHUFFLE_PARTITIONS: ("parallelism", "the number of state partitions"),
                   STATE_STORE: ("state-backend", "the state store")}
#: The rules of a new parallelism that the restart carries the state to: RocksDB state repartitioned,
#: any other re-seeded into new state.
REPARTITIONED = f"{PREFIX}.setting.parallelism.repartitioned"
RESEEDED = f"{PREFIX}.setting.parallelism.reseeded"


def check(change: Change) -> list[Finding]:
    return [
        *unsupported(change.old, change.new),
        *row_filters(change),
        *sources(change),
        *output_expressions(change),
        *having(change),
    ]


def unsupported(old: Pipeline, new: Pipeline) -> list[Finding]:
    findings = []
    for side, pipeline in (("before", old), ("after", new)):
        for construct in pipeline.unsupported:
            findings.append(Finding(f"{PREFIX}.not-covered", UNKNOWN,
                                    f"{construct} ({side} the change) is outside the compatibility rules",
                                    construct if side == "before" else "", construct if side == "after" else ""))
    return findings


def row_filters(change: Change) -> list[Finding]:
    old = [f.key for f in change.old_agg.filters]
    new = [f.key for f in change.new_agg.filters]
    if sorted(old) == sorted(new):
        return []
    return [Finding(f"{PREFIX}.row-filter.changed", UNKNOWN,
                    "a filter before the window changed: state is reusable but open windows mix rows "
                    "filtered both ways",
                    " AND ".join(f.written for f in change.old_agg.filters) or "(none)",
                    " AND ".join(f.written for f in change.new_agg.filters) or "(none)")]


def sources(change: Change) -> list[Finding]:
    return source_findings(change, change.old_agg.source_table, change.new_agg.source_table,
                           change.old_agg.stored_columns | change.new_agg.stored_columns)


def source_findings(change: Change, old_name: str, new_name: str, read: Set[str]) -> list[Finding]:
    """The source a stateful operator reads: which table, its watermark, its connector options and
    the types of the columns in ``read`` (those whose values end up in state)."""
    if old_name != new_name:
        return [Finding(f"{PREFIX}.source.changed", UNKNOWN,
                        f"the job reads {new_name} instead of {old_name}: the checkpointed source "
                        "offsets may not apply", old_name, new_name)]
    old, new = change.old_model.tables.get(old_name), change.new_model.tables.get(new_name)
    if old is None or new is None:
        return []
    findings = [*_column_types(old, new, read)]
    if (old.rowtime, _strategy(old)) != (new.rowtime, _strategy(new)):
        findings.append(Finding(f"{PREFIX}.watermark.changed", UNKNOWN,
                                f"the watermark of {old_name} changed: which rows count as late changes "
                                "for windows that are already open",
                                _watermark(old), _watermark(new)))
    if dict(old.options) != dict(new.options):
        findings.append(Finding(f"{PREFIX}.source-options.changed", UNKNOWN,
                                f"the connector options of {old_name} changed: the checkpointed source "
                                "offsets may not apply", _options(old), _options(new)))
    return findings


def _column_types(old: Table, new: Table, read: Set[str]) -> list[Finding]:
    findings = []
    for column in old.columns:
        other = new.column(column.name)
        if other is not None and column.name in read and column.type != other.type:
            findings.append(Finding(f"{PREFIX}.column-type.changed", INCOMPATIBLE,
                                    f"column {old.name}.{column.name} changed type from {column.type} "
                                    f"to {other.type}; state stored for it has the old type",
                                    f"{column.name} {column.type}", f"{other.name} {other.type}"))
    return findings


def _strategy(table: Table) -> int | str | None:
    """The watermark strategy by what it does: a delay in ms however it is spelled (``INTERVAL '4'
    SECOND`` or ``'4000' MILLISECOND``), else its expression."""
    if table.watermark_delay_ms is not None:
        return table.watermark_delay_ms
    return table.watermark.key if table.watermark else None


def _watermark(table: Table) -> str:
    return f"WATERMARK FOR {table.rowtime} AS {table.watermark.written}" if table.watermark else "(none)"


def _options(table: Table) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in sorted(table.options.items()))


def output_expressions(change: Change) -> list[Finding]:
    """The SELECT list's keys and what it computes from keys and aggregates after the window
    (``COUNT(*) + 1``); an aggregate it shows as it is has rules of its own."""
    old = [o.value.key for o in change.old.outputs if _computed_on_emit(o)]
    new = [o.value.key for o in change.new.outputs if _computed_on_emit(o)]
    if sorted(old) == sorted(new):
        return []
    return [Finding(f"{PREFIX}.output-expression", FULL,
                    "expressions computed from keys and aggregates after the window changed; "
                    "they are evaluated on emit and hold no state",
                    ", ".join(o.value.written for o in change.old.outputs),
                    ", ".join(o.value.written for o in change.new.outputs))]


def having(change: Change) -> list[Finding]:
    """HAVING's conditions on each window's results: evaluated where the window is emitted, holding
    no state (an aggregate only they read is kept as any other, by the aggregate rules)."""
    old, new = change.old_agg.having, change.new_agg.having
    if sorted(c.key for c in old) == sorted(c.key for c in new):
        return []
    return [Finding(f"{PREFIX}.having", FULL,
                    "HAVING's conditions on each window's results changed; they are evaluated on emit and hold "
                    "no state", " AND ".join(c.written for c in old) or "(none)",
                    " AND ".join(c.written for c in new) or "(none)")]


def _computed_on_emit(output: Output) -> bool:
    """A group key, or an expression the window's results are computed into: not a bare aggregate
    call (with its FILTER and NULL clause), a window attribute or a rank."""
    if output.role not in (Role.KEY, Role.EXPRESSION, Role.AGGREGATE):
        return False
    node = output.value.expr
    while isinstance(node, (exp.Filter, *NULL_TREATMENTS)):
        node = node.this
    return not (isinstance(node, exp.AggFunc)
                or isinstance(node, exp.Anonymous) and node.name.upper() in FLINK_AGGREGATES)


def _state_settings(old: JobModel, new: JobModel) -> list[Finding]:
    """The settings a checkpoint keeps for its life. A new parallelism on RocksDB state is carried
    over: the restart repartitions the state first (:mod:`spark_jobs.rescale`); on other state, it
    re-seeds the state into new state where every pipeline's can be (:mod:`analyzer.reseed`);
    anything else takes effect only with new state."""
    before, after = state_settings(old), state_settings(new)
    findings = []
    for key, (rule, what) in _STATE_SETTINGS.items():
        if before[key] == after[key]:
            continue
        was, now = written_as(old, key), written_as(new, key)
        if key == SHUFFLE_PARTITIONS and before[STATE_STORE] == after[STATE_STORE] == ROCKSDB:
            findings.append(Finding(REPARTITIONED, FULL,
                                    f"{what} changes from {before[key]} to {after[key]}: the restart first "
                                    f"repartitions the RocksDB state to {after[key]} partitions (Spark's offline "
                                    "repartition), so every open window keeps its state", was, now))
            continue
        reseeding = key == SHUFFLE_PARTITIONS and reseeds_partitions(old, new)
        blocked = {p.name: why for p in new.pipelines if p.stages() and (why := not_reseedable(new, p))} \
            if reseeding else {}
        if reseeding and not blocked:
            findings.append(Finding(RESEEDED, FULL,
                                    f"{what} changes from {before[key]} to {after[key]}: Spark repartitions "
                                    "RocksDB state only, so the restart re-seeds: it archives the old state inside "
                                    f"the checkpoint and carries its open windows into new state of {after[key]} "
                                    "partitions, every aggregate going on", was, now))
            continue
        message = (f"{what} changes from {before[key]} to {after[key]}: Spark keeps a checkpoint's {what} for its "
                   "life (Flink rescales its key groups), so the new value takes effect only with new state")
        if key == SHUFFLE_PARTITIONS:
            message += ("; Spark repartitions RocksDB state only (SET 'state.backend.type' = 'rocksdb' from the "
                        "first deploy carries the state across a new parallelism)")
            if reseeding:
                message += "; a re-seed cannot carry " + ", ".join(f"the state of {name} ({why})"
                                                                  for name, why in sorted(blocked.items()))
        findings.append(Finding(f"{PREFIX}.setting.{rule}", INCOMPATIBLE, message, was, now))
    return findings


def settings(old: JobModel, new: JobModel) -> list[Finding]:
    findings = _state_settings(old, new)
    for key in sorted(set(old.settings) | set(new.settings)):
        if (key.startswith("table.exec.emit.") or key in FLINK_TO_SPARK or key in _STATE_SETTINGS
                or old.settings.get(key) == new.settings.get(key)):
            continue
        before = f"SET '{key}' = '{old.settings[key]}'" if key in old.settings else "(unset)"
        after = f"SET '{key}' = '{new.settings[key]}'" if key in new.settings else "(unset)"
        if key in WIDTH_SETTINGS.values():
            findings.append(Finding(f"{PREFIX}.setting.layout", FULL,
                                    f"{key} changed: the state's width is fixed for the life of the "
                                    "checkpoint; the new value applies when the state is next cleared",
                                    before, after))
        elif key.startswith(RUNTIME_SETTINGS):
            findings.append(Finding(f"{PREFIX}.setting.runtime", FULL,
                                    f"runtime setting {key} changed; it does not touch state", before, after))
        else:
            findings.append(Finding(f"{PREFIX}.setting.changed", UNKNOWN,
                                    f"setting {key} changed; no rule covers its effect on state",
                                    before, after))
    unused = ignored(new)
    if unused:
        findings.append(Finding(f"{PREFIX}.setting.ignored", FULL,
                                f"no meaning on Spark, so the job runs without: {', '.join(unused)}"))
    return findings

"""Joins the Spark job runs: a window join or an interval join, told from a SELECT's FROM clause.

Both read their inputs' columns as the inputs' SELECTs name them (``P.id``, :meth:`Scope.branch`),
because they are evaluated over the rows their inputs emit, not over the inputs' sources. Any other
join (or a join read in a way the job cannot, a ROW field of an input) is none of them: the analyzer
still judges its window aggregations, and the Spark job refuses it by name.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

from stategate.analyzer.dialect import LateralTable
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.intervals import interval_ms
from stategate.analyzer.model import (
    BRANCH_MARKER,
    WINDOW_FIELDS,
    IntervalJoin,
    JoinBranch,
    JoinKind,
    Output,
    Resolved,
    Role,
    StreamBranch,
    Table,
    Window,
    WindowAggregate,
    WindowJoin,
    branch_column,
    sql_key,
)
from stategate.analyzer.scope import Relation, Scope, conjuncts, time_attribute, window_field_of


def join_of(select: exp.Select, scope: Scope, items: list[tuple[str, exp.Expr]],
            tables: Mapping[str, Table]) -> WindowJoin | IntervalJoin | None:
    """The join of ``select`` (which aggregates nothing over the joined rows) if the Spark job runs
    it; ``items`` is its SELECT list, stars expanded."""
    try:
        return _window_join(select, scope, items) or _interval_join(select, scope, items, tables)
    except SQLModelError:  # reads its inputs in a way the Spark job cannot (a ROW field, ...)
        return None


def _window_join(select: exp.Select, scope: Scope, items: list[tuple[str, exp.Expr]]) -> WindowJoin | None:
    """The query as a window join, if it is one: every input a window aggregation (of one window
    shape), each joined on equal window_start and window_end with an input before it, and
    nothing aggregated over the joined rows. None for any other join (or none)."""
    joins = select.args.get("joins") or []
    where = select.args.get("where")
    relations = _named(scope)
    if not joins or any(isinstance(j.this, LateralTable) for j in joins) or relations is None \
            or not _joins_only_here(scope, joins):
        return None
    aggregates = {alias: r.aggregate for alias, r in relations.items() if r.aggregate is not None and r.topn is None}
    shapes = {window.shape if window is not None else None for window in map(_window_of, aggregates.values())}
    if len(aggregates) != len(relations) or len(shapes) != 1 or None in shapes:
        return None
    aliases = list(relations)
    kinds, conditions = [], []
    for index, join in enumerate(joins, start=1):
        on = join.args.get("on")
        if on is None or join.kind.upper() not in ("", "INNER", "OUTER"):
            return None
        condition = _in_branches(scope, on)
        starts = _window_equalities(condition, scope, aliases[index], aliases[:index])
        if starts is None:
            return None
        kinds.append(JoinKind(join.side.upper() or "INNER"))
        compared = [c for c in conjuncts(condition) if not any(c is start for start in starts)]
        conditions.append(Resolved.of(exp.and_(*compared), on))
    filters = tuple(Resolved.of(_in_branches(scope, c), c) for c in conjuncts(where.this)) if where else ()
    branches = tuple(JoinBranch(alias, aggregate) for alias, aggregate in aggregates.items())
    return WindowJoin(branches, tuple(kinds), tuple(conditions), filters, _outputs(scope, items))


def _interval_join(select: exp.Select, scope: Scope, items: list[tuple[str, exp.Expr]],
                   tables: Mapping[str, Table]) -> IntervalJoin | None:
    """The query as an interval join, if it is one: a stream (a table, or a filtered view of one)
    INNER JOINed with a window aggregation, with its event time bounded on both sides by one
    window attribute, and nothing aggregated over the joined rows. None for any other join."""
    joins = select.args.get("joins") or []
    where = select.args.get("where")
    relations = _named(scope)
    if len(joins) != 1 or relations is None or len(relations) != 2 \
            or not _joins_only_here(scope, joins):
        return None
    join = joins[0]
    on = join.args.get("on")
    if on is None or join.side or join.kind.upper() not in ("", "INNER") or isinstance(join.this, LateralTable):
        return None
    streams = [a for a, r in relations.items() if _is_stream(r)]
    windows = [a for a, r in relations.items() if r.aggregate is not None and r.topn is None and not r.joined]
    if len(streams) != 1 or len(windows) != 1:
        return None
    stream, window = relations[streams[0]], relations[windows[0]]
    table = tables.get(stream.source)  # type: ignore[arg-type]
    rowtime = time_attribute(table) if table is not None else None
    times = [n for n in stream.names if rowtime is not None and sql_key(stream.columns[n]) == sql_key(rowtime)]
    parts = [_in_branches(scope, c) for c in [*conjuncts(on), *(conjuncts(where.this) if where else [])]]
    window_fields = {n for n in window.names if window_field_of(window.columns[n]) in WINDOW_FIELDS}
    for time in times:
        bounds = _time_bounds(parts, branch_column(streams[0], time), windows[0], window_fields)
        if bounds is not None:
            condition = exp.and_(*parts)
            columns = tuple(Output(n, Resolved.of(stream.columns[n]), Role.EXPRESSION) for n in stream.names)
            return IntervalJoin(StreamBranch(streams[0], stream.source, stream.filters, columns),  # type: ignore[arg-type]
                                JoinBranch(windows[0], window.aggregate), Resolved.of(condition),  # type: ignore[arg-type]
                                time, *bounds, _outputs(scope, items))
    return None

def _outputs(scope: Scope, items: list[tuple[str, exp.Expr]]) -> tuple[Output, ...]:
    """The SELECT list over the joined rows, reading the inputs' columns (:meth:`Scope.branch`)."""
    return tuple(Output(name, Resolved.of(_in_branches(scope, node), node), Role.EXPRESSION) for name, node in items)

def _in_branches(scope: Scope, node: exp.Expr) -> exp.Expr:
    node = node.unalias() if isinstance(node, exp.Alias) else node

    def rewrite(n: exp.Expr) -> exp.Expr:
        return scope.branch(n) if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star) else n

    return node.copy().transform(rewrite, copy=False)


def _named(scope: Scope) -> dict[str, Relation] | None:
    """The scope's inputs by alias, or None when one has no name (a join's inputs all have one)."""
    named = {alias: relation for alias, relation in scope.relations.items() if alias is not None}
    return named if len(named) == len(scope.relations) else None


def _window_of(aggregate: WindowAggregate) -> Window | None:
    """The window an aggregation's rows belong to: its own, or, for an aggregation grouped by the
    window attributes of the windows it reads, theirs."""
    if aggregate.window is not None:
        return aggregate.window
    return _window_of(aggregate.source) if isinstance(aggregate.source, WindowAggregate) else None


def _joins_only_here(scope: Scope, joins: list[exp.Join]) -> bool:
    """Whether the joins of this SELECT are the only ones below it (no input joins anything itself)."""
    inputs = list(scope.relations.values())
    return len(inputs[0].joins) == len(joins) and not any(r.joins or r.joined for r in inputs[1:])


def _is_stream(relation: Relation) -> bool:
    """A relation of a table's rows: no window, aggregation, table function, rank or join."""
    return isinstance(relation.source, str) and relation.aggregate is None and relation.window is None \
        and not relation.udtfs and relation.rank is None and relation.topn is None and not relation.open_columns


def _time_bounds(parts: list[exp.Expr], time: exp.Column, window: str,
                 fields: set[str]) -> tuple[str, int, int] | None:
    """``(window column, lower ms, upper ms)`` when the conjuncts bound ``time`` on both sides by one
    window column of branch ``window``: ``time BETWEEN x - lower AND x + upper`` (or ``>=`` and ``<=``)."""
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    key = sql_key(time)
    for conjunct in parts:
        pairs: list[tuple[exp.Expr, exp.Expr, bool]] = []  # (time side, bound side, is lower)
        if isinstance(conjunct, exp.Between):
            pairs = [(conjunct.this, conjunct.args["low"], True), (conjunct.this, conjunct.args["high"], False)]
        elif isinstance(conjunct, (exp.GTE, exp.GT, exp.LTE, exp.LT)):
            lower = isinstance(conjunct, (exp.GTE, exp.GT))
            pairs = [(conjunct.this, conjunct.expression, lower), (conjunct.expression, conjunct.this, not lower)]
        for side, bound, lower in pairs:
            if sql_key(side) != key:
                continue
            offset = _offset_from(bound, window, fields)
            if offset is not None:
                column, ms = offset
                (lows if lower else highs)[column] = -ms if lower else ms
    both = [c for c in lows if c in highs]
    return (both[0], lows[both[0]], highs[both[0]]) if both else None


def _offset_from(node: exp.Expr, window: str, fields: set[str]) -> tuple[str, int] | None:
    """``(window column, ms)`` for ``W.x``, ``W.x + INTERVAL ...`` or ``W.x - INTERVAL ...``."""
    sign, offset = 1, 0
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        try:
            offset = interval_ms(node.expression)
        except SQLModelError:
            return None
        sign = 1 if isinstance(node, exp.Add) else -1
        node = node.this
    if isinstance(node, exp.Column) and node.table == BRANCH_MARKER + window and node.name in fields:
        return node.name, sign * offset
    return None


def _window_equalities(condition: exp.Expr, scope: Scope, alias: str, earlier: list[str]) -> list[exp.Expr] | None:
    """If ``condition`` equates branch ``alias``'s window_start and window_end with those of an
    earlier branch (Flink's window join condition), its conjuncts equating window_start: Flink's
    planner splits both equalities off, and its join operator keeps each side's rows by window end
    and joins those of one end, their starts not compared. For TUMBLE, HOP and CUMULATE windows
    one end is one start; two SESSIONs ending together join whatever their starts (probed in Flink
    2.3: a session from 08:00:36 joins one from 08:46:51, both ending at 09:02:49). None if the
    condition is no window join's."""
    def window_field(column: exp.Expr) -> tuple[str, str | None] | None:
        if not isinstance(column, exp.Column) or not column.table.startswith(BRANCH_MARKER):
            return None
        owner = column.table[len(BRANCH_MARKER):]
        return owner, window_field_of(scope.relations[owner].columns[column.name])

    equated: dict[str, set[str]] = {}
    starts: list[exp.Expr] = []
    for conjunct in conjuncts(condition):
        if not isinstance(conjunct, exp.EQ):
            continue
        left, right = window_field(conjunct.this), window_field(conjunct.expression)
        if left is None or right is None or left[1] != right[1] or left[1] not in ("window_start", "window_end"):
            continue
        owners = {left[0], right[0]}
        if alias in owners and owners - {alias} and (owners - {alias}).pop() in earlier:
            equated.setdefault(left[1], set()).add(alias)
            if left[1] == "window_start":
                starts.append(conjunct)
    return starts if all(alias in equated.get(name, ()) for name in ("window_start", "window_end")) else None

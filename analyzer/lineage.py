"""Column lineage: every expression of a query, rewritten in terms of the source columns it reads.

State identity must not depend on names the user is free to change (output aliases, view names,
subquery nesting) and must depend on everything that changes a value (how a column is computed).
So each relation maps its visible column names to *resolved* expressions: ``max(c)`` over
``(SELECT substring(c, 1, 5) AS c FROM MyTable)`` resolves to ``MAX(SUBSTRING(MyTable.c, 1, 5))``,
while ``max(c)`` over ``MyView`` that renames ``MyTable.c`` resolves to ``MAX(MyTable.c)``.

Window attributes resolve to ``$windowN.window_start`` (N = nesting level), columns of a table
function to ``$udtf.c1``. Relations (:mod:`analyzer.scope`) also carry the stateful operators met on
the way (window TVF, window aggregation, ROW_NUMBER, joins, told by :mod:`analyzer.joins`) so
:mod:`analyzer.build` can assemble a pipeline.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, TypeGuard

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

from stategate.analyzer.dialect import (
    Descriptor,
    GroupWindow,
    GroupWindowAuxiliary,
    LateralTable,
    WindowTVF,
    function_name,
)
from stategate.analyzer.aggregates import AGGREGATES, FLINK_AGGREGATES, IGNORE_NULLS, NULL_TREATMENTS
from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.intervals import interval_ms
from stategate.analyzer.joins import join_of
from stategate.analyzer.model import (
    RANK_MARKER,
    UDTF_MARKER,
    WINDOW_FIELDS,
    WINDOW_MARKER,
    Aggregate,
    Clause,
    ClauseKind,
    Function,
    GroupKey,
    OrderKey,
    Output,
    RankedRows,
    Resolved,
    Role,
    Table,
    TimeKind,
    TopN,
    Window,
    WindowAggregate,
    WindowOperator,
    sql_key,
)
from stategate.analyzer.scope import (
    Rank,
    Relation,
    Scope,
    conjuncts,
    needs_quotes,
    reads_window_fields,
    source_column,
    time_attribute,
    window_column,
    window_field_of,
)
from stategate.analyzer.windows import WindowKind

_AUXILIARY_FIELD = {
    "START": "window_start",
    "END": "window_end",
    "ROWTIME": "window_time",
    "PROCTIME": "window_proctime",
}




@dataclass
class _CommonTable:
    """A ``WITH`` query: its body, the common tables its body may read (those defined before it, in
    its own WITH and the ones around it), and its relation once resolved (a CTE read twice is one
    relation, as a view is)."""

    name: str
    query: exp.Query
    columns: tuple[str, ...]
    visible: Mapping[str, _CommonTable]
    relation: Relation | None = field(default=None, repr=False)


class Resolver:
    """Resolves queries against the script's catalog. One instance per script.

    Names in FROM resolve as in Flink: a common table expression of an enclosing ``WITH`` first
    (the innermost wins), then a view, then a table. A view's body is resolved on its own, seeing
    no CTE of the query that reads it.
    """

    def __init__(
        self,
        tables: Mapping[str, Table],
        views: Mapping[str, exp.Query],
        functions: Mapping[str, Function],
    ) -> None:
        self.tables = tables
        self.views = views
        self.functions = functions
        self._view_cache: dict[str, Relation] = {}
        self._resolving: set[str] = set()
        self._ctes: Mapping[str, _CommonTable] = {}  # the common tables in scope, by name

    # ----------------------------------------------------------------- relations (FROM items)
    def table(self, name: str) -> Relation:
        cte = self._ctes.get(name)
        if cte is not None:
            if cte.relation is None:
                with self._scope(cte.visible):
                    cte.relation = _renamed(self.query(cte.query), cte.columns, name)
            return cte.relation
        if name in self.views:
            if name in self._resolving:
                raise SQLModelError(f"view {name!r} refers to itself")
            if name not in self._view_cache:
                self._resolving.add(name)
                try:
                    with self._scope({}):
                        self._view_cache[name] = self.query(self.views[name])
                finally:
                    self._resolving.discard(name)
            return self._view_cache[name]
        table = self.tables.get(name)
        if table is None:
            # Seed examples compare scripts without DDL: an undeclared table exposes any column.
            return Relation(columns={}, names=(), source=name, open_columns=True)
        columns: dict[str, exp.Expr] = {}
        for column in table.columns:
            columns[column.name] = (
                column.computed.expr.copy() if column.computed
                else source_column(name, column.name)
            )
        return Relation(columns=columns, names=tuple(c.name for c in table.columns), source=name)

    def from_item(self, node: exp.Expr) -> tuple[str | None, Relation]:
        alias = node.alias_or_name if isinstance(node, (exp.Table, exp.Subquery)) else None
        if isinstance(node, exp.Table):
            if isinstance(node.this, exp.TableFromRows):
                return node.alias or None, self.tvf(node.this)
            return alias, self.table(node.name)
        if isinstance(node, exp.TableFromRows):
            return node.alias or None, self.tvf(node)
        if isinstance(node, exp.Subquery):
            return node.alias or None, self.query(node.this)
        raise SQLModelError(f"unsupported FROM item: {node.sql(dialect='flink')}")

    def tvf(self, node: exp.TableFromRows) -> Relation:
        call = node.this
        if not isinstance(call, WindowTVF):
            raise SQLModelError(
                f"unsupported table function in FROM: {node.sql(dialect='flink')}"
                " (expected TUMBLE, HOP, CUMULATE or SESSION)"
            )
        table_arg = call.args["table"]
        base = self.table(table_arg.this.name)
        descriptor = call.args["descriptor"]
        if not isinstance(descriptor, Descriptor) or len(descriptor.expressions) != 1:
            raise SQLModelError(
                f"{call.args['kind'].name} needs DESCRIPTOR(time_column) as its second argument"
            )
        scope = Scope({None: base})
        time_attr = scope.resolve(descriptor.expressions[0])
        partition = tuple(
            Resolved.of(scope.resolve(k), k) for k in table_arg.args.get("partition_by") or []
        )
        window = self.window(
            call.args["kind"].name, WindowOperator.TVF, time_attr, descriptor.expressions[0],
            call.expressions, base, partition, call,
        )
        columns = dict(base.columns)
        for name in WINDOW_FIELDS:
            columns[name] = window_column(window.level, name)
        return replace(
            base, columns=columns, names=(*base.names, *WINDOW_FIELDS), window=window,
            between=(), rank=None, topn=None, outputs=(),
        )

    def window(
        self,
        kind: str,
        operator: WindowOperator,
        time_attr: exp.Expr,
        written_attr: exp.Expr,
        intervals: list[exp.Expr],
        base: Relation,
        partition: tuple[Resolved, ...],
        node: exp.Expr,
    ) -> Window:
        ms = []
        for interval in intervals:
            try:
                ms.append(interval_ms(interval))
            except SQLModelError as error:
                raise _at(error, interval, node) from None
        try:
            shape = WindowKind.of(kind, ms)
        except SQLModelError as error:
            raise _at(error, node, node) from None
        return Window(
            shape=shape,
            operator=operator,
            time_attr=Resolved.of(time_attr, written_attr),
            time_kind=self._time_kind(time_attr),
            partition_keys=partition,
            level=base.level + 1,
            written=node.sql(dialect="flink"),
        )

    def _time_kind(self, attr: exp.Expr) -> TimeKind:
        if isinstance(attr, exp.Column) and attr.table.startswith(WINDOW_MARKER):
            return TimeKind.ROWTIME if attr.name == "window_time" else TimeKind.PROCTIME
        rowtimes = (time_attribute(table) for table in self.tables.values())
        if any(rowtime is not None and sql_key(rowtime) == sql_key(attr) for rowtime in rowtimes):
            return TimeKind.ROWTIME
        if isinstance(attr, exp.Anonymous) and attr.name.upper() == "PROCTIME":
            return TimeKind.PROCTIME
        return TimeKind.UNKNOWN

    # ----------------------------------------------------------------- queries
    def query(self, node: exp.Expr) -> Relation:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if not isinstance(node, exp.Select):
            raise SQLModelError(
                f"unsupported query form {type(node).__name__.upper()}: "
                "only SELECT queries are supported",
                clause=node.sql(dialect="flink")[:80],
            )
        with_ = node.args.get("with_")
        if with_ is None:
            return _SelectResolver(self, node).resolve()
        with self._scope(self._common_tables(with_)):
            return _SelectResolver(self, node).resolve()

    def _common_tables(self, with_: exp.With) -> dict[str, _CommonTable]:
        """The common tables in scope inside a ``WITH``: the enclosing ones, shadowed by its own."""
        if with_.args.get("recursive"):
            raise SQLModelError("WITH RECURSIVE is not supported: Flink SQL has no recursive queries",
                                clause=with_.sql(dialect="flink")[:80])
        scope = dict(self._ctes)
        defined: set[str] = set()
        for cte in with_.expressions:
            name = cte.alias_or_name
            if name in defined:
                raise SQLModelError(f"WITH defines {name!r} twice", clause=cte.sql(dialect="flink")[:80])
            defined.add(name)
            alias = cte.args.get("alias")
            columns = tuple(c.name for c in alias.columns) if alias is not None else ()
            # Its body sees the common tables before it, not itself: Flink's WITH is not recursive.
            scope[name] = _CommonTable(name, cte.this, columns, dict(scope))
        return scope

    @contextmanager
    def _scope(self, ctes: Mapping[str, _CommonTable]) -> Iterator[None]:
        saved, self._ctes = self._ctes, ctes
        try:
            yield
        finally:
            self._ctes = saved

    def function_language(self, name: str) -> str | None:
        function = self.functions.get(name) or next(
            (f for n, f in self.functions.items() if n.lower() == name.lower()), None
        )
        return function.language if function else None




class _SelectResolver:
    """Resolves one SELECT: FROM, WHERE, GROUP BY / window aggregation, ROW_NUMBER, Top-N."""

    def __init__(self, resolver: Resolver, select: exp.Select) -> None:
        self.resolver = resolver
        self.select = self._grouped_distinct(select)

    def _grouped_distinct(self, select: exp.Select) -> exp.Select:
        """A ``SELECT DISTINCT`` of plain items (no aggregate, no ``OVER``, no GROUP BY, no ``*``)
        as the GROUP BY of its items, as Flink plans it (Calcite turns DISTINCT into an aggregation:
        over a window TVF's ``window_start`` and ``window_end``, a window aggregation of no
        aggregates, one row per window and distinct row). Any other stays as written, and is
        refused as such."""
        distinct = select.args.get("distinct")
        items = select.expressions
        if distinct is None or distinct.args.get("on") is not None or select.args.get("group") is not None \
                or any(isinstance(node, (exp.Star, exp.Window)) or self._built_in_aggregate(node)
                       for item in items for node in item.walk()):
            return select
        grouped = select.copy()
        grouped.set("distinct", None)
        return grouped.group_by(*(item.unalias().copy() for item in items), copy=False)

    def resolve(self) -> Relation:
        select = self.select
        from_ = select.args.get("from_")
        if from_ is None:
            raise SQLModelError("a streaming query needs a FROM clause", clause=select.sql(dialect="flink")[:80])
        alias, base = self.resolver.from_item(from_.this)
        others: dict[str | None, Relation] = {}  # the relations it joins, by alias
        udtfs: list[str] = []
        joins: list[str] = []
        aggregates: list[WindowAggregate] = []
        for join in select.args.get("joins") or []:
            target = join.this
            j_alias: str | None
            if isinstance(target, LateralTable):
                name, j_alias, j_rel = self._lateral(target)
                udtfs.append(name)
            else:
                written = " ".join(join.sql(dialect="flink").split())
                j_alias, j_rel = self.resolver.from_item(target)
                # The joined branch keeps state of its own: its window aggregation (with the
                # cascade feeding it) and whatever it joined itself.
                joins += [written, *j_rel.joins]
                aggregates += [*([j_rel.aggregate] if j_rel.aggregate is not None else []), *j_rel.joined]
            others[j_alias] = j_rel
        base = replace(base, udtfs=(*base.udtfs, *udtfs), joins=(*base.joins, *joins),
                       joined=(*base.joined, *aggregates), unsupported=(*base.unsupported, *self._unsupported_clauses()))
        scope = Scope({alias: base, **others})
        where = select.args.get("where")
        join = join_of(select, scope, self._select_items(scope), self.resolver.tables) \
            if select.args.get("joins") and not self._is_aggregation() else None
        if join is not None:
            return replace(self._project(scope, base), join=join)
        if where is not None and base.rank is not None:
            return self._topn(scope, base, where.this)
        if where is not None:
            base = self._where(scope, base, where.this)
        if self._is_aggregation():
            return self._aggregate(scope, base)
        return self._project(scope, base)

    # --- FROM helpers
    def _lateral(self, node: LateralTable) -> tuple[str, str, Relation]:
        """The table function's name, its alias and the columns it adds."""
        call = node.this
        name = call.name if isinstance(call, exp.Func) else call.sql()
        alias = node.args.get("alias")
        columns = tuple(c.name for c in alias.columns) if alias is not None else ()
        return name, alias.name if alias is not None else name, Relation(
            columns={c: exp.column(c, table=UDTF_MARKER) for c in columns}, names=columns,
        )

    def _unsupported_clauses(self) -> list[str]:
        return [f"{label} in {self.select.sql(dialect='flink')[:60]}"
                for key, label in (("distinct", "SELECT DISTINCT"), ("order", "ORDER BY"),
                                   ("limit", "LIMIT"), ("having", "HAVING"))
                if self.select.args.get(key) is not None and (key != "having" or not self._is_aggregation())]

    def _where(self, scope: Scope, base: Relation, predicate: exp.Expr) -> Relation:
        between, filters, emitted = list(base.between), list(base.filters), []
        for conjunct in conjuncts(predicate):
            resolved = scope.resolve(conjunct)
            if base.window is not None and reads_window_fields(resolved):
                between.append(Clause(ClauseKind.FILTER, Resolved.of(resolved, conjunct)))
            elif base.aggregate is not None and not self._is_aggregation():
                # Over a window aggregation's rows: Flink's Calc after it, as a HAVING is.
                emitted.append(Resolved.of(resolved, conjunct))
            else:
                filters.append(Resolved.of(resolved, conjunct))
        if emitted and base.aggregate is not None:
            aggregate = replace(base.aggregate, having=(*base.aggregate.having, *emitted))
            base = replace(base, aggregate=aggregate, source=aggregate if base.source is base.aggregate else base.source)
        return replace(base, between=tuple(between), filters=tuple(filters))

    # --- plain projection (no aggregation)
    def _project(self, scope: Scope, base: Relation) -> Relation:
        columns: dict[str, exp.Expr] = {}
        names: list[str] = []
        outputs: list[Output] = []
        between = list(base.between)
        unsupported = list(base.unsupported)
        rank = None
        for item in self._select_items(scope):
            name, written = item
            node = written.unalias() if isinstance(written, exp.Alias) else written
            if isinstance(node, exp.Window):
                if isinstance(node.this, exp.RowNumber):
                    rank = self._rank(scope, name, node)
                else:
                    unsupported.append(f"OVER window {node.sql(dialect='flink')[:60]}")
                continue
            resolved = scope.resolve(node)
            if base.window is not None and reads_window_fields(resolved) and window_field_of(resolved) is None:
                between.append(Clause(ClauseKind.CALCULATION, Resolved.of(resolved, written)))
            columns[name] = resolved
            names.append(name)
            outputs.append(Output(name, Resolved.of(resolved, written), _role(resolved)))
        return replace(base, columns=columns, names=tuple(names), between=tuple(between),
                       rank=rank or base.rank, outputs=tuple(outputs), unsupported=tuple(unsupported))

    def _select_items(self, scope: Scope) -> list[tuple[str, exp.Expr]]:
        items: list[tuple[str, exp.Expr]] = []
        for item in self.select.expressions:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                aliases = [item.table] if isinstance(item, exp.Column) and item.table else list(scope.relations)
                for alias in aliases:
                    if alias not in scope.relations:
                        raise SQLModelError(f"unknown table or alias {alias!r}", clause=item.sql(dialect="flink"))
                    # Qualified by its relation: A.* over a join reads A's columns, whatever B holds.
                    items.extend((n, exp.column(n, table=alias, quoted=needs_quotes(n)))
                                 for n in scope.relations[alias].names)
                continue
            # Flink names unaliased expressions EXPR$<position>.
            items.append((item.alias_or_name or f"EXPR${len(items)}", item))
        return items

    def _rank(self, scope: Scope, name: str, node: exp.Window) -> Rank:
        partition = tuple(Resolved.of(scope.resolve(k), k) for k in node.args.get("partition_by") or [])
        order = node.args.get("order")
        # The dialect's NULL_ORDERING is Flink's, so sqlglot fills in nulls_first where none is written.
        keys = tuple(
            OrderKey(Resolved.of(scope.resolve(o.this), o.this), bool(o.args.get("desc")),
                     bool(o.args.get("nulls_first")))
            for o in (order.expressions if order else [])
        )
        return Rank(name, partition, keys, node.sql(dialect="flink"))

    # --- Top-N
    def _topn(self, scope: Scope, base: Relation, predicate: exp.Expr) -> Relation:
        """A WHERE over a ROW_NUMBER(): the rank range it keeps, as Flink's planner reads it, and
        the conditions beside it, which Flink applies to the ranked rows."""
        rank = base.rank
        assert rank is not None
        first, last = 1, None
        unsupported = list(base.unsupported)
        filters = []
        for conjunct in conjuncts(predicate):
            if not any(c.name == rank.column for c in conjunct.find_all(exp.Column)):
                filters.append(Resolved.of(scope.resolve(conjunct), conjunct))
                continue
            bounds = _rank_bounds(conjunct, rank.column)
            if bounds is None:
                unsupported.append(f"filter beside the Top-N rank: {conjunct.sql(dialect='flink')}")
                continue
            for low, high in bounds:
                if low is not None:
                    first = max(first, low)
                if high is not None:
                    last = high if last is None else min(last, high)
        if last is None:
            raise SQLModelError(
                f"ROW_NUMBER() column {rank.column!r} is filtered without an upper bound; "
                "expected WHERE rk <= N or rk < N", clause=predicate.sql(dialect="flink"),
            )
        if last < first:
            raise SQLModelError(f"ROW_NUMBER() column {rank.column!r} is filtered to no rank (ranks {first} to "
                                f"{last}): a Top-N keeps ranks 1 to N (rk <= N) or M to N (rk BETWEEN M AND N)",
                                clause=predicate.sql(dialect="flink"))
        rows = None
        if base.aggregate is None and base.window is not None and isinstance(base.source, str):
            rows = RankedRows(base.window, base.source, base.outputs, base.filters, base.between)
        topn = TopN(rank.partition_keys, rank.order_keys, last, rank.column, rank.written, rows, first, tuple(filters))
        ranked = replace(base, topn=topn, rank=None, unsupported=tuple(unsupported),
                         columns={**base.columns, rank.column: exp.column(rank.column, table=RANK_MARKER)})
        if self._is_aggregation():
            raise SQLModelError("aggregation over a Top-N result is not supported",
                                clause=self.select.sql(dialect="flink")[:80])
        return self._project(Scope({None: ranked}), ranked)

    # --- window aggregation
    def _is_aggregation(self) -> bool:
        if self.select.args.get("group"):
            return True
        return any(
            isinstance(node, exp.AggFunc) and not node.find_ancestor(exp.Window)
            for item in self.select.expressions for node in item.find_all(exp.AggFunc)
        )

    def _aggregate(self, scope: Scope, base: Relation) -> Relation:
        """The window aggregation this SELECT is: its window and keys from the GROUP BY (or the
        window TVF it reads), its aggregates and outputs from the SELECT list."""
        window, keys, grouping_sets = self._grouping(scope, base)
        key_texts = {k.value.key for k in keys}
        aggregates, outputs, columns = self._select_list(scope, window, key_texts)
        having, read = self._having(scope, window, key_texts, {a.identity: a for a in aggregates})
        aggregates += tuple(read)
        source = base.aggregate if base.aggregate is not None else base.source
        if source is None:
            raise SQLModelError("a window aggregation that reads no table", clause=self.select.sql(dialect="flink")[:80])
        aggregate = WindowAggregate(
            source=source,
            window=window,
            group_keys=keys,
            aggregates=aggregates,
            grouping_sets=grouping_sets,
            filters=base.filters,
            between=base.between,
            udtfs=base.udtfs,
            outputs=outputs,
            having=having,
            written=self.select.sql(dialect="flink"),
        )
        return Relation(
            columns=columns, names=tuple(columns), source=aggregate, level=window.level if window else base.level,
            aggregate=aggregate, outputs=outputs, unsupported=base.unsupported,
            udtfs=base.udtfs, joins=base.joins, joined=base.joined,
        )

    def _grouping(self, scope: Scope, base: Relation
                  ) -> tuple[Window | None, tuple[GroupKey, ...], tuple[tuple[Resolved, ...], ...] | None]:
        """The GROUP BY's window (a legacy group window, else the TVF's that ``base`` reads), its
        keys in the order written (each grouping set's keys once), and its grouping sets, if any."""
        group = self.select.args.get("group")
        keys: list[GroupKey] = []
        grouping_sets: list[tuple[Resolved, ...]] | None = None
        window = base.window
        for node in _flatten_group(group.expressions if group else []):
            if isinstance(node, GroupWindow):
                if window is not None:
                    raise SQLModelError("two windows in one GROUP BY", clause=node.sql(dialect="flink"))
                window = self._group_window(scope, base, node)
                keys.append(GroupKey(Resolved.of(window_column(window.level, "window"), node), "window"))
            elif isinstance(node, (exp.GroupingSets, exp.Rollup, exp.Cube)):
                sets = [tuple(Resolved.of(scope.resolve(e), e) for e in s) for s in _expand_grouping(node)]
                grouping_sets = (grouping_sets or []) + sets
                seen = {k.value.key for k in keys}
                for key in (r for s in sets for r in s):
                    if key.key not in seen:
                        seen.add(key.key)
                        keys.append(GroupKey(key))
            else:
                resolved = scope.resolve(node)
                keys.append(GroupKey(Resolved.of(resolved, node), window_field_of(resolved)))
        return window, tuple(keys), tuple(grouping_sets) if grouping_sets is not None else None

    def _select_list(self, scope: Scope, window: Window | None, key_texts: set[str]
                     ) -> tuple[tuple[Aggregate, ...], tuple[Output, ...], dict[str, exp.Expr]]:
        """The SELECT list over the groups: its aggregates (each identity once, in the order first
        written), its outputs and each output's resolved expression by name, in which every
        aggregate reads as its identity was first written (:func:`_respelled`)."""
        aux = self._auxiliary(window)
        aggregates: dict[str, Aggregate] = {}
        outputs: list[Output] = []
        columns: dict[str, exp.Expr] = {}
        for name, written in self._select_items(scope):
            node = written.unalias() if isinstance(written, exp.Alias) else written
            resolved = _respelled(scope.resolve(node, aux), self._aggregates_in(scope, node, aux, key_texts), aggregates)
            columns[name] = resolved
            outputs.append(Output(name, Resolved.of(resolved, written), _role(resolved, key_texts)))
        return tuple(aggregates.values()), tuple(outputs), columns

    def _having(self, scope: Scope, window: Window | None, key_texts: set[str], selected: dict[str, Aggregate]
                ) -> tuple[tuple[Resolved, ...], list[Aggregate]]:
        """The HAVING's conditions on each group's results (its conjuncts), each aggregate in them
        spelled as the SELECT list (``selected``, by identity) or the HAVING first wrote it, and
        the aggregates they read: those the SELECT list does not show are kept in state too."""
        having = self.select.args.get("having")
        if having is None:
            return (), []
        aux = self._auxiliary(window)
        conditions, read = [], dict(selected)
        for conjunct in conjuncts(having.this):
            resolved = _respelled(scope.resolve(conjunct, aux), self._aggregates_in(scope, conjunct, aux, key_texts), read)
            conditions.append(Resolved.of(resolved, conjunct))
        return tuple(conditions), [a for identity, a in read.items() if identity not in selected]

    def _group_window(self, scope: Scope, base: Relation, node: GroupWindow) -> Window:
        kind = node.args["kind"].name
        time_attr = scope.resolve(node.this)
        return self.resolver.window(kind, WindowOperator.GROUP, time_attr, node.this, node.expressions, base, (), node)

    def _auxiliary(self, window: Window | None) -> Callable[[exp.Expr], exp.Expr | None]:
        def rewrite(node: exp.Expr) -> exp.Expr | None:
            if isinstance(node, GroupWindowAuxiliary):
                if window is None or window.operator is not WindowOperator.GROUP:
                    raise SQLModelError(
                        f"{node.sql(dialect='flink')} needs a matching group window in GROUP BY"
                    )
                return window_column(window.level, _AUXILIARY_FIELD[node.args["property"].name])
            return None

        return rewrite

    def _aggregates_in(self, scope: Scope, node: exp.Expr, aux, key_texts: set[str]) -> list[Aggregate]:
        """Aggregate calls of one select item. An unknown function over non-key columns is a UDAF,
        except in an aggregate's FILTER condition, which Flink evaluates row by row (it refuses an
        aggregate there: ``COUNT(*) FILTER (WHERE IS_DIGIT(item))`` is one aggregate), and inside a
        group key, one value per group (``UPPER(tag(item))`` grouped by itself is a key, ``tag`` a
        scalar function)."""
        found: list[Aggregate] = []
        for candidate in node.find_all(exp.AggFunc, exp.Anonymous):
            ancestors = list(_ancestors_within(candidate, node))
            if any(self._built_in_aggregate(a) for a in ancestors):
                continue
            if isinstance(candidate, exp.Anonymous) and not self._built_in_aggregate(candidate):
                in_filter = any(isinstance(a, exp.Where) and isinstance(a.parent, exp.Filter) for a in ancestors)
                in_key = any(sql_key(scope.resolve(a, aux)) in key_texts for a in ancestors)
                if in_filter or in_key or candidate.find(exp.AggFunc) \
                        or _is_grouped(scope.resolve(candidate, aux), key_texts):
                    continue
                language = self.resolver.function_language(candidate.name) or "undeclared"
                found.append(self._aggregate_of(scope, candidate, aux, user_defined=True, language=language))
            else:
                found.append(self._aggregate_of(scope, candidate, aux))
        return found

    def _built_in_aggregate(self, node: exp.Expr) -> bool:
        """A call of one of Flink's aggregates: sqlglot's own aggregate nodes, and the plain calls of
        :data:`~analyzer.aggregates.FLINK_AGGREGATES` no ``CREATE FUNCTION`` declares."""
        if isinstance(node, exp.AggFunc):
            return True
        return isinstance(node, exp.Anonymous) and node.name.upper() in FLINK_AGGREGATES \
            and self.resolver.function_language(node.name) is None

    def _aggregate_of(self, scope, agg: exp.Expr, aux, user_defined=False, language=None) -> Aggregate:
        call = _with_modifiers(agg)
        parent = call.parent
        written: exp.Expr = call
        flt = None
        if isinstance(parent, exp.Filter) and parent.this is call:
            written, flt = parent, parent.expression.this
            if isinstance(parent.parent, NULL_TREATMENTS):  # sqlglot reads it; Flink's parser refuses it
                raise _at(SQLModelError(f"{parent.parent.sql(dialect='flink')}: IGNORE NULLS or RESPECT NULLS after "
                                        "FILTER is a syntax error in Flink"), parent.parent, parent.parent)
        distinct = False
        if isinstance(agg, exp.Anonymous):
            function = agg.name.upper()
            raw_args = list(agg.expressions)
            if not user_defined and raw_args and isinstance(raw_args[0], exp.Distinct):  # LISTAGG(DISTINCT x)
                distinct, raw_args = True, [*raw_args[0].expressions, *raw_args[1:]]
        else:
            function = function_name(agg) if isinstance(agg, exp.Func) else type(agg).__name__.upper()
            raw_args = []
            if isinstance(agg.this, exp.Distinct):
                distinct = True
                raw_args = list(agg.this.expressions)
            elif agg.this is not None and not isinstance(agg.this, exp.Star):
                raw_args = [agg.this]
            raw_args += [agg.args[key] for key in _CONSTANTS if agg.args.get(key) is not None]
            # JSON_OBJECTAGG(KEY k VALUE v): its key, then its value.
            raw_args += [part for e in agg.expressions
                         for part in ((e.this, e.expression) if isinstance(e, exp.JSONKeyValue) else (e,))] \
                if agg.args.get("expressions") else []
        if function == "COUNT" and not distinct and len(raw_args) == 1 and _non_null_literal(raw_args[0]):
            raw_args = []  # COUNT(1) counts every row, as COUNT(*): the same state
        args = tuple(Resolved.of(scope.resolve(a, aux), a) for a in raw_args)
        named = _named_call(function, call)
        return Aggregate(
            function=function,
            distinct=distinct,
            args=args,
            filter=Resolved.of(scope.resolve(flt, aux), flt) if flt is not None else None,
            user_defined=user_defined,
            language=language,
            expr=scope.resolve(written, aux),
            written=written.sql(dialect="flink"),
            modifiers=(_modifiers(scope.resolve(named, aux), named is not agg) if _has_modifiers(named) else "")
            + _null_clause(function, agg),
        )


def _respelled(resolved: exp.Expr, found: list[Aggregate], first: dict[str, Aggregate]) -> exp.Expr:
    """``resolved`` with each of its aggregates (``found``) spelled as its identity was first
    written (``first``, by identity, which the new ones join): two spellings of one aggregate
    (``COUNT(*)`` and ``COUNT(1)``, ``ARRAY_AGG(x)`` and ``ARRAY_AGG(x) RESPECT NULLS``) are one
    state, whose result the engine finds by the first one's expression (the job stopped as it
    started on the other: "`a0` RESPECT NULLS" is no SQL)."""
    spellings = {}
    for aggregate in found:
        kept = first.setdefault(aggregate.identity, aggregate)
        if kept is not aggregate and kept.expr_key != aggregate.expr_key:
            spellings[aggregate.expr_key] = kept.expr
    if not spellings:
        return resolved

    def respell(node: exp.Expr) -> exp.Expr:
        if isinstance(node, (exp.AggFunc, exp.Anonymous, exp.Filter, *_MODIFIERS)):
            spelled = spellings.get(sql_key(node))
            if spelled is not None:
                return spelled.copy()
        return node

    return resolved.transform(respell)


def _at(error: SQLModelError, place: exp.Expr, clause: exp.Expr) -> SQLModelError:
    """``error`` located at the first token of ``place`` that the parser kept a position for."""
    where = next((n.meta for n in place.walk() if "line" in n.meta), None)
    if where is None:
        return SQLModelError(error.message, clause=clause.sql(dialect="flink"))
    # A token's column is its last character's; the error points at its first.
    return SQLModelError(error.message, line=where["line"], col=where["col"] - (where["end"] - where["start"]),
                         clause=clause.sql(dialect="flink"))


def _renamed(relation: Relation, columns: tuple[str, ...], name: str) -> Relation:
    """A relation under the column names a ``WITH name (c1, c2) AS (...)`` gives it, by position."""
    if not columns:
        return relation
    if len(columns) != len(relation.names):
        raise SQLModelError(f"WITH {name} names {len(columns)} columns, its query has {len(relation.names)}")
    renames = dict(zip(relation.names, columns))
    return replace(
        relation, names=columns,
        columns={renames[n]: relation.columns[n] for n in relation.names},
        outputs=tuple(replace(o, name=renames.get(o.name, o.name)) for o in relation.outputs),
    )


#: Clauses sqlglot parses as a node around the aggregate call they modify.
_MODIFIERS = (*NULL_TREATMENTS, exp.WithinGroup)
#: Arguments of an aggregate node that are read as its inputs; the others are modifiers.
_CONSTANTS = ("accuracy",)  # after its value: APPROX_COUNT_DISTINCT(x, 0.9)
_INPUTS = ("this", "expressions", *_CONSTANTS)


def _with_modifiers(agg: exp.Expr) -> exp.Expr:
    """The aggregate call with the clauses written around it (``FIRST_VALUE(x) IGNORE NULLS``)."""
    call = agg
    while isinstance(call.parent, _MODIFIERS) and call.parent.this is call:
        call = call.parent
    return call


def _extra_arguments(agg: exp.Expr) -> list[tuple[str, exp.Expr | list]]:
    return [(key, value) for key, value in agg.args.items()
            if key not in _INPUTS and value and (isinstance(value, exp.Expr) or (
                isinstance(value, list) and all(isinstance(v, exp.Expr) for v in value)))]


def _null_clause(function: str, agg: exp.Expr) -> str:
    """A JSON aggregate's ``NULL ON NULL`` or ``ABSENT ON NULL``, where it is not the function's
    default (:attr:`AggregateFunction.null_switch`): a clause that spells the default names the same
    state as none. Empty where none is written."""
    clause = agg.args.get("null_handling")
    if not isinstance(clause, str):
        return ""
    entry = AGGREGATES.get(function)
    if entry is not None and entry.null_switch and clause.upper() != entry.null_switch:
        return ""
    return f" {clause.upper()}"


def _named_call(function: str, call: exp.Expr) -> exp.Expr:
    """The call with the clauses that name its state: all written, but a ``RESPECT NULLS`` on an
    aggregate whose :attr:`~analyzer.aggregates.AggregateFunction.null_switch` is ``IGNORE NULLS``,
    which spells its default (ARRAY_AGG's) and names the same state as none, as a JSON aggregate's
    default clause does (:func:`_null_clause`)."""
    entry = AGGREGATES.get(function)
    if isinstance(call, exp.RespectNulls) and entry is not None and entry.null_switch == IGNORE_NULLS:
        return call.this
    return call


def _has_modifiers(call: exp.Expr) -> bool:
    return isinstance(call, _MODIFIERS) or bool(_extra_arguments(call))


def _modifiers(call: exp.Expr, wrapped: bool) -> str:
    """The canonical text of what decides an aggregate's value beside its function and inputs: the
    aggregate node's other arguments, then the clauses around it. Empty for a plain call."""
    agg = call
    while isinstance(agg, _MODIFIERS):
        agg = agg.this
    extra = [f"{key}={sql_key(value) if isinstance(value, exp.Expr) else ', '.join(map(sql_key, value))}"
             for key, value in _extra_arguments(agg)]
    text = f" [{'; '.join(extra)}]" if extra else ""
    if wrapped:
        inner, outer = sql_key(agg), sql_key(call)
        text += outer[len(inner):] if outer.startswith(inner) else f" AS {outer}"
    return text


def _non_null_literal(node: exp.Expr) -> bool:
    return isinstance(node, (exp.Literal, exp.Boolean))


def _ancestors_within(node: exp.Expr, root: exp.Expr):
    current = node.parent
    while current is not None and node is not root:
        yield current
        if current is root:
            return
        current = current.parent


def _is_grouped(resolved: exp.Expr, key_texts: set[str]) -> bool:
    """A function call is scalar when everything it reads is a group key (or a window attribute)."""
    if sql_key(resolved) in key_texts:
        return True
    columns = list(resolved.find_all(exp.Column))
    return bool(columns) and all(
        sql_key(c) in key_texts or c.table.startswith(WINDOW_MARKER) for c in columns
    )


def _role(resolved: exp.Expr, key_texts: set[str] | None = None) -> Role:
    if window_field_of(resolved):
        return Role.WINDOW
    if key_texts is not None and sql_key(resolved) in key_texts:
        return Role.KEY
    if isinstance(resolved, exp.Column) and resolved.table == RANK_MARKER:
        return Role.RANK
    if resolved.find(exp.AggFunc) is not None:
        return Role.AGGREGATE
    return Role.EXPRESSION




def _rank_bounds(conjunct: exp.Expr, rank_column: str) -> list[tuple[int | None, int | None]] | None:
    """The ranks a condition on the rank column keeps, as (lowest, highest) pairs (None where it
    sets no bound), as Flink's planner reads it: ``rk <= N``, ``rk < N``, ``rk = N``, ``rk >= M``,
    ``rk > M`` with either side first, ``rk BETWEEN M AND N``, ``NOT rk > N``, and a bound written
    as arithmetic of whole numbers or a cast of one to an integer type. None for any other
    condition on it (``rk <> 2``, ``rk IN (1, 2)``, ``rk <= other_column``, a fraction)."""
    bounds: list[tuple[int | None, int | None]] = []
    for part in conjuncts(simplify(conjunct.copy(), dialect="flink")):
        column, value = part.this, part.expression if isinstance(part, exp.Binary) else None
        if not isinstance(column, exp.Column) or column.name != rank_column or type(part) not in _RANK_RANGES:
            return None
        n = _whole_number(value)
        if n is None:
            return None
        bounds.append(_RANK_RANGES[type(part)](n))
    return bounds


#: The ranks ``rk <op> N`` keeps, as (lowest, highest), None where the comparison sets no bound.
_RANK_RANGES: dict[type[exp.Expr], Callable[[int], tuple[int | None, int | None]]] = {
    exp.LTE: lambda n: (None, n), exp.LT: lambda n: (None, n - 1), exp.EQ: lambda n: (n, n),
    exp.GTE: lambda n: (n, None), exp.GT: lambda n: (n + 1, None),
}


def _whole_number(node: exp.Expr | None) -> int | None:
    """A whole number written as one (``3``, ``-1``), or cast to an integer type (``CAST(3 AS
    BIGINT)``); sqlglot's simplifier has folded any arithmetic of them already."""
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.INTEGER_TYPES):
        node = node.this
    if isinstance(node, exp.Neg):
        n = _whole_number(node.this)
        return None if n is None else -n
    return int(node.to_py()) if _is_whole(node) else None


def _is_whole(node: exp.Expr | None) -> TypeGuard[exp.Literal]:
    return isinstance(node, exp.Literal) and node.is_int


def _flatten_group(expressions: list[exp.Expr]) -> list[exp.Expr]:
    flat: list[exp.Expr] = []
    for node in expressions:
        if isinstance(node, (exp.Tuple,)):
            flat.extend(_flatten_group(node.expressions))
        elif isinstance(node, exp.Paren):
            flat.extend(_flatten_group([node.this]))
        else:
            flat.append(node)
    return flat



def _expand_grouping(node: exp.Expr) -> list[list[exp.Expr]]:
    """GROUPING SETS / ROLLUP / CUBE as the explicit list of grouping sets they stand for."""
    items = [_flatten_group([e]) for e in node.expressions]
    if isinstance(node, exp.GroupingSets):
        return [[] if isinstance(e, exp.Tuple) and not e.expressions else _flatten_group([e]) for e in node.expressions]
    flat = [e for group in items for e in group]
    if isinstance(node, exp.Rollup):
        return [flat[:i] for i in range(len(flat), -1, -1)]
    sets: list[list[exp.Expr]] = []
    for mask in range(2 ** len(flat) - 1, -1, -1):
        sets.append([e for i, e in enumerate(flat) if mask & (1 << (len(flat) - 1 - i))])
    return sets



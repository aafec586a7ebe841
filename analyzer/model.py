"""The job model: what a streaming SQL script means for its state, built once and shared.

The analyzer compares two models; the Spark compiler turns one into a plan. Expressions are kept
twice on purpose: ``expr`` is the resolved sqlglot tree (columns rewritten to the source columns they
come from, so the compiler can evaluate it) and ``key`` is its canonical Flink SQL text, which is what
equality means for state: two aggregates are the same state iff their keys are equal, whatever the
aliases, views or subqueries in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Mapping

from sqlglot import exp

from stategate.analyzer.dialect import Flink
from stategate.analyzer.windows import SharedKind, WindowKind

#: Table marker of resolved window attribute columns (``$window1.window_start``); the number is the
#: window's nesting level so a cascaded window's attributes never collide with the outer one's.
WINDOW_MARKER = "$window"
#: Table marker of columns produced by a table function (``LATERAL TABLE``).
UDTF_MARKER = "$udtf"

WINDOW_FIELDS = ("window_start", "window_end", "window_time")


class WindowOperator(str, Enum):
    """How a window aggregation is written: a window TVF (seed 001), or a legacy group window,
    ``GROUP BY TUMBLE(...)`` (seed 000). Flink runs them as different operators, with different state."""

    TVF = "tvf"
    GROUP = "group"

    @property
    def described(self) -> str:
        return "a window TVF" if self is WindowOperator.TVF else "a legacy group window"


class TimeKind(str, Enum):
    """What a window's time attribute is: event time (a rowtime), processing time, or neither the
    analyzer can tell."""

    ROWTIME = "rowtime"
    PROCTIME = "proctime"
    UNKNOWN = "unknown"


class Role(str, Enum):
    """What an output column shows: a group key, an aggregate, a window attribute, a Top-N's rank,
    or an expression computed from those."""

    KEY = "key"
    AGGREGATE = "aggregate"
    WINDOW = "window"
    RANK = "rank"
    EXPRESSION = "expression"


class ClauseKind(str, Enum):
    """A clause between a window TVF and its GROUP BY: a calculation on window attributes, or a
    filter on them."""

    CALCULATION = "calculation"
    FILTER = "filter"


class JoinKind(str, Enum):
    """How a window join joins each branch after the first."""

    INNER = "INNER"
    LEFT = "LEFT"
    RIGHT = "RIGHT"
    FULL = "FULL"


def sql_key(expression: exp.Expr) -> str:
    """Canonical text of a resolved expression: the identity used for every comparison.

    Redundant parentheses go (``SUM((b))`` is ``SUM(b)``); those between two operators, as in
    ``(a + b) * c``, stay once."""
    if expression.find(exp.Paren) is not None:
        expression = expression.transform(_drop_redundant_parens)
    return expression.sql(dialect=Flink)


def _is_operator(node: exp.Expr | None) -> bool:
    return isinstance(node, (exp.Binary, exp.Unary, exp.Predicate)) and not isinstance(node, exp.Paren)


def _drop_redundant_parens(node: exp.Expr) -> exp.Expr:
    if not isinstance(node, exp.Paren):
        return node
    inner = node.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if _is_operator(inner) and _is_operator(node.parent):
        return node if node.this is inner else exp.Paren(this=inner)
    return inner


@dataclass(frozen=True)
class Resolved:
    """An expression resolved to source columns, and the SQL the user wrote for it."""

    expr: exp.Expr = field(compare=False, repr=False)
    key: str
    written: str = field(compare=False, default="")

    @classmethod
    def of(cls, expr: exp.Expr, written: exp.Expr | str | None = None) -> Resolved:
        key = sql_key(expr)
        text = written.sql(dialect=Flink) if isinstance(written, exp.Expr) else written
        return cls(expr=expr, key=key, written=text or key)

    def __str__(self) -> str:
        return self.written


@dataclass(frozen=True)
class Column:
    name: str
    type: str | None
    computed: Resolved | None = None
    #: Declared ``NOT NULL``, or in the ``PRIMARY KEY``, which Flink makes NOT NULL
    #: (:mod:`analyzer.nullability`). Not part of the table's comparison: Flink's state does not keep it.
    not_null: bool = field(default=False, compare=False)


#: The connectors a table may name (``'connector' = ...``) that the engine runs.
FILESYSTEM, PRINT, KAFKA = "filesystem", "print", "kafka"


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    options: Mapping[str, str]
    rowtime: str | None = None
    watermark: Resolved | None = None
    watermark_delay_ms: int | None = None
    proctime: str | None = None
    line: int | None = None
    partition_keys: tuple[str, ...] = ()  # PARTITIONED BY

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass(frozen=True)
class View:
    name: str
    sql: str


@dataclass(frozen=True)
class Function:
    name: str
    class_name: str
    language: str


@dataclass(frozen=True)
class Window:
    shape: WindowKind  # the kind and its intervals (analyzer.windows)
    operator: WindowOperator
    time_attr: Resolved
    time_kind: TimeKind
    partition_keys: tuple[Resolved, ...] = ()
    level: int = 1
    written: str = field(compare=False, default="")

    @property
    def kind(self) -> str:
        return self.shape.name

    @property
    def latest_slice_first(self) -> bool:
        """Whether Flink merges a window's slices from the latest one back, which the order a
        LISTAGG lists its values in shows: a window TVF's HOP does (``SharedKind.latest_first``); a
        legacy group window's HOP merges its panes from the first on, as a CUMULATE its slices."""
        return self.operator is WindowOperator.TVF and isinstance(self.shape, SharedKind) and self.shape.latest_first

    def describe(self) -> str:
        parts = [f"{self.kind}({self.time_attr.key}", self.shape.describe()]
        if self.partition_keys:
            parts.append("partition by " + ", ".join(k.key for k in self.partition_keys))
        return ", ".join(parts) + ")"


@dataclass(frozen=True)
class GroupKey:
    value: Resolved
    window_field: str | None = None  # window_start/window_end/window_time, or "window" (legacy)

    @property
    def is_window(self) -> bool:
        return self.window_field is not None


@dataclass(frozen=True)
class Aggregate:
    function: str
    distinct: bool
    args: tuple[Resolved, ...]
    filter: Resolved | None = None
    user_defined: bool = False
    language: str | None = None
    expr: exp.Expr = field(compare=False, repr=False, default=None)  # type: ignore[assignment]
    written: str = field(compare=False, default="")
    #: What else decides the value, resolved: the call's other arguments (LISTAGG's separator, a
    #: quantile) and the clauses written around it (``IGNORE NULLS``, ``WITHIN GROUP (ORDER BY x)``).
    modifiers: str = ""

    @cached_property
    def identity(self) -> str:
        """Stable name of this aggregate's state: function, DISTINCT, resolved inputs, modifiers,
        FILTER. An aggregate without modifiers is named as it always was, so the identities a
        checkpoint recorded stay valid."""
        distinct = "DISTINCT " if self.distinct else ""
        args = ", ".join(a.key for a in self.args) or "*"
        flt = f" FILTER (WHERE {self.filter.key})" if self.filter else ""
        return f"{self.function}({distinct}{args}){self.modifiers}{flt}"

    @cached_property
    def expr_key(self) -> str:
        return sql_key(self.expr)

    @property
    def on_window_field(self) -> bool:
        return any(WINDOW_MARKER in a.key for a in self.args)


@dataclass(frozen=True)
class Clause:
    """A clause between a window TVF and its GROUP BY (seed 001 treats these specially)."""

    kind: ClauseKind
    value: Resolved


@dataclass(frozen=True)
class OrderKey:
    """One ``ORDER BY`` key of a ranking, with where its NULLs rank.

    Flink's planner collates NULL as the lowest value (``NullCollation.LOW``): first in ascending
    order, last in descending. So ``x DESC`` and ``x DESC NULLS LAST`` rank alike, while ``x DESC
    NULLS FIRST`` puts the rows without ``x`` on top."""

    value: Resolved
    descending: bool
    nulls_first: bool

    @property
    def nulls_default(self) -> bool:
        return self.nulls_first is not self.descending

    def describe(self) -> str:
        """``key DESC``, with the NULL order only where it is not the default (the text a state
        signature records, unchanged for keys that never named one)."""
        nulls = "" if self.nulls_default else f" NULLS {'FIRST' if self.nulls_first else 'LAST'}"
        return f"{self.value.key} {'DESC' if self.descending else 'ASC'}{nulls}"


@dataclass(frozen=True)
class RankedRows:
    """What a Top-N ranks when it reads a window TVF directly (seed 002's second form: no
    aggregation between them). Its state keeps whole rows per window, so all of this is state."""

    window: Window
    source: str
    columns: tuple[Output, ...]  # the row it keeps, as the ranking SELECT carries it
    filters: tuple[Resolved, ...] = ()  # row filters before the window
    between: tuple[Clause, ...] = ()  # filters and calculations on window attributes


@dataclass(frozen=True)
class TopN:
    """A window Top-N: the ranks ``first`` to ``limit`` of each partition (Flink's constant rank
    range: ``rk <= N`` keeps 1 to N, ``rk BETWEEN 2 AND 3`` or ``rk = 2`` a range of their own), and
    the ``filters`` its WHERE puts beside the rank, which Flink applies to the ranked rows."""

    partition_keys: tuple[Resolved, ...]
    order_keys: tuple[OrderKey, ...]
    limit: int
    rank_column: str
    written: str = field(compare=False, default="")
    rows: RankedRows | None = None  # set when it ranks a window TVF's rows directly
    first: int = 1
    filters: tuple[Resolved, ...] = ()

    def describe(self) -> str:
        """The ranks kept, as a rank filter would say it: ``rk <= 3``, ``rk BETWEEN 2 AND 3``."""
        if self.first == 1:
            return f"{self.rank_column} <= {self.limit}"
        return f"{self.rank_column} BETWEEN {self.first} AND {self.limit}"


@dataclass(frozen=True)
class Output:
    name: str
    value: Resolved
    role: Role


@dataclass(frozen=True)
class WindowAggregate:
    """One stateful window aggregation: the unit whose state a verdict is about."""

    source: str | WindowAggregate  # a table name, or the cascaded aggregate feeding it
    window: Window | None
    group_keys: tuple[GroupKey, ...]
    aggregates: tuple[Aggregate, ...]
    grouping_sets: tuple[tuple[Resolved, ...], ...] | None
    filters: tuple[Resolved, ...] = ()  # row filters before the window
    between: tuple[Clause, ...] = ()
    udtfs: tuple[str, ...] = ()
    outputs: tuple[Output, ...] = ()
    having: tuple[Resolved, ...] = ()  # conditions on each group's results, applied where it is emitted
    written: str = field(compare=False, default="")

    @property
    def source_table(self) -> str:
        return self.source if isinstance(self.source, str) else self.source.source_table

    @cached_property
    def stored_columns(self) -> frozenset[str]:
        """Source columns whose values end up in state: group keys and aggregate inputs. Cached: a
        query body shared by many INSERTs is one aggregation, read once."""
        values = [k.value for k in self.group_keys] + [v for a in self.aggregates for v in a.args]
        return frozenset(c.name for v in values for c in v.expr.find_all(exp.Column) if c.table == self.source_table)

    @property
    def per_window(self) -> bool:
        """Whether this aggregates the windows of the aggregation it reads, grouped by their
        window_start and window_end (Nexmark q5's maximum count per window): a window aggregation in
        the window it reads, whose groups are whole windows."""
        if self.window is not None or not isinstance(self.source, WindowAggregate):
            return False
        fields = {k.window_field for k in self.group_keys}
        return {"window_start", "window_end"} <= fields and fields - {None} <= set(WINDOW_FIELDS)

    def chain(self) -> tuple[WindowAggregate, ...]:
        """This aggregation and the cascaded ones feeding it, outermost first."""
        upstream = self.source.chain() if isinstance(self.source, WindowAggregate) else ()
        return (self, *upstream)


@dataclass(frozen=True)
class JoinBranch:
    """One input of a window join: a window aggregation's rows, named as its SELECT names them."""

    alias: str
    aggregate: WindowAggregate


@dataclass(frozen=True)
class WindowJoin:
    """Window aggregations joined on their windows (Flink's window join). Its conditions, filters
    and outputs read the branches' columns as ``alias.name`` (:func:`branch_column`): a window join
    is evaluated over the rows its branches emit, not over their sources."""

    branches: tuple[JoinBranch, ...]
    kinds: tuple[JoinKind, ...]  # how each branch after the first joins
    conditions: tuple[Resolved, ...]  # the ON condition of each branch after the first
    filters: tuple[Resolved, ...]  # WHERE, over the joined rows
    outputs: tuple[Output, ...]

    def spans(self) -> tuple[range, ...]:
        """Where each branch's chain of windows stands in its pipeline's ``Pipeline.stages`` (and so
        in its state layout): the branches in turn."""
        spans, start = [], 0
        for branch in self.branches:
            spans.append(range(start, start + len(branch.aggregate.chain())))
            start = spans[-1].stop
        return tuple(spans)


@dataclass(frozen=True)
class StreamBranch:
    """A join input that is a stream of rows: a table, or a view or subquery filtering one."""

    alias: str
    table: str
    filters: tuple[Resolved, ...]  # its rows' filters, over the table's columns
    columns: tuple[Output, ...]  # its columns, over the table's columns


@dataclass(frozen=True)
class IntervalJoin:
    """A stream joined with a window aggregation's rows on a range of the stream's event time
    around an attribute of the window (Nexmark q7): ``S.t BETWEEN W.x - lower AND W.x + upper``.
    The condition reads branch columns as :class:`WindowJoin`'s do."""

    stream: StreamBranch
    window: JoinBranch
    condition: Resolved  # ON and WHERE
    time: str  # the stream's event-time column
    bound: str  # the window's column the range is around
    lower_ms: int
    upper_ms: int
    outputs: tuple[Output, ...]


#: The qualifier of the rank column of a ``ROW_NUMBER() OVER (...)``, until its Top-N is known.
RANK_MARKER = "$rank"

#: The qualifier of a window join's branch columns, in front of the branch's alias.
BRANCH_MARKER = "$branch:"


def branch_column(alias: str, name: str) -> exp.Column:
    """How a window join's expressions read column ``name`` of branch ``alias``."""
    return exp.column(name, table=BRANCH_MARKER + alias, quoted=True)


@dataclass(frozen=True)
class Pipeline:
    """One ``INSERT INTO`` (or a bare ``SELECT``): the chain of stateful operators behind a sink."""

    name: str  # sink table, or "select#N"
    sink: str | None
    aggregate: WindowAggregate | None
    topn: TopN | None
    outputs: tuple[Output, ...]
    line: int | None = None
    written: str = field(compare=False, default="")
    unsupported: tuple[str, ...] = ()  # constructs no rule covers (OVER windows, ORDER BY, ...)
    joins: tuple[str, ...] = ()  # its join clauses, as written: operators with state of their own
    joined: tuple[WindowAggregate, ...] = ()  # window aggregations in joined branches, in query order
    join: WindowJoin | IntervalJoin | None = None  # a join the Spark job runs (None: none, or another join)

    def stages(self) -> tuple[WindowAggregate, ...]:
        """Every window aggregation keeping state: the main chain (outermost first), then each joined
        branch's chain. A state layout has one entry per stage, in this order."""
        main = self.aggregate.chain() if self.aggregate is not None else ()
        return (*main, *(stage for joined in self.joined for stage in joined.chain()))


@dataclass(frozen=True)
class JobModel:
    tables: Mapping[str, Table]
    views: Mapping[str, View]
    functions: Mapping[str, Function]
    settings: Mapping[str, str]
    pipelines: tuple[Pipeline, ...]
    source: str = "<sql>"

    @cached_property
    def pipeline_named(self) -> Mapping[str, Pipeline]:
        """Each pipeline by its name (the first, should two share one): the other version's
        pipeline is looked up once for each of this one's, so a script of 40,000 INSERTs stays linear."""
        named: dict[str, Pipeline] = {}
        for pipeline in self.pipelines:
            named.setdefault(pipeline.name, pipeline)
        return named

    @cached_property
    def declared_types(self) -> Mapping[tuple[str, str], str]:
        """Each declared column's type as written, by (table, column): what expressions are typed
        from (:func:`analyzer.value_types.value_type`), gathered once rather than per expression."""
        return {(t.name, c.name): c.type for t in self.tables.values() for c in t.columns if c.type}

    def emit_settings(self) -> dict[str, str]:
        """Early/late-fire settings: they change how windows emit, so they are part of the state."""
        return {k: v for k, v in self.settings.items() if k.startswith("table.exec.emit.")}

    def emit_enabled(self) -> bool:
        return any(
            k.endswith(("early-fire.enabled", "late-fire.enabled")) and v.lower() == "true"
            for k, v in self.settings.items()
        )


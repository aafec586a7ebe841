"""What a query reads, and how names resolve in one SELECT.

A :class:`Relation` is what a FROM item or a query produces: its visible column names mapped to
*resolved* expressions (in terms of the source columns they read), plus the stateful operators met
below it. A :class:`Scope` resolves the names of one SELECT against the relations of its FROM
clause. :mod:`analyzer.lineage` builds relations; :mod:`analyzer.joins` reads them to tell a join the
Spark job can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from sqlglot import exp

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import (
    WINDOW_MARKER,
    Clause,
    IntervalJoin,
    OrderKey,
    Output,
    Resolved,
    Table,
    TopN,
    Window,
    WindowAggregate,
    WindowJoin,
    branch_column,
)


@dataclass(frozen=True)
class Rank:
    """``ROW_NUMBER() OVER (...) AS rk`` seen, waiting for the ``WHERE rk <= N`` that makes a Top-N."""

    column: str
    partition_keys: tuple[Resolved, ...]
    order_keys: tuple[OrderKey, ...]
    written: str


@dataclass(frozen=True)
class Relation:
    """What a FROM item or a query produces: resolved columns plus the operators below them. A value:
    a resolver builds a new one with ``dataclasses.replace``, so a cached view is shared, not copied."""

    columns: Mapping[str, exp.Expr]
    names: tuple[str, ...]
    source: str | WindowAggregate | None = None
    level: int = 0  # windows aggregated below this relation
    window: Window | None = None  # a TVF applied but not yet aggregated
    between: tuple[Clause, ...] = ()
    filters: tuple[Resolved, ...] = ()
    udtfs: tuple[str, ...] = ()
    aggregate: WindowAggregate | None = None
    rank: Rank | None = None
    topn: TopN | None = None
    outputs: tuple[Output, ...] = ()
    open_columns: bool = False  # an undeclared table: any column name resolves to it
    unsupported: tuple[str, ...] = ()
    joins: tuple[str, ...] = ()  # join clauses met on the way, as written
    joined: tuple[WindowAggregate, ...] = ()  # window aggregations in joined branches
    join: WindowJoin | IntervalJoin | None = None

    def lookup(self, name: str) -> exp.Expr | None:
        if name in self.columns:
            return self.columns[name]
        if self.open_columns and isinstance(self.source, str):
            return source_column(self.source, name)
        return None


def needs_quotes(name: str) -> bool:
    """Whether an identifier must be quoted to read back as itself."""
    return not name.isidentifier()


def source_column(table: str, name: str) -> exp.Column:
    """The resolved form of a table's physical column: what every reference to it becomes."""
    return exp.column(name, table=table, quoted=needs_quotes(name))


def time_attribute(table: Table) -> exp.Expr | None:
    """What a table's rowtime resolves to: its column, or the expression computing it (a computed
    rowtime, ``ts AS CASE ... END, WATERMARK FOR ts AS ...``); None without a WATERMARK."""
    column = next((c for c in table.columns if c.name == table.rowtime), None)
    if column is None:
        return None
    return column.computed.expr if column.computed else source_column(table.name, column.name)


def window_column(level: int, name: str) -> exp.Column:
    return exp.column(name, table=f"{WINDOW_MARKER}{level}")


def window_field_of(expr: exp.Expr) -> str | None:
    """``window_start`` if the resolved expression *is* a window attribute column."""
    if isinstance(expr, exp.Column) and expr.table.startswith(WINDOW_MARKER):
        return expr.name
    return None


def reads_window_fields(expr: exp.Expr) -> bool:
    return any(c.table.startswith(WINDOW_MARKER) for c in expr.find_all(exp.Column))


class Scope:
    """Name resolution inside one SELECT: the relations of its FROM clause, by alias."""

    def __init__(self, relations: dict[str | None, Relation]) -> None:
        self.relations = relations

    def resolve(self, node: exp.Expr, extra: Callable[[exp.Expr], exp.Expr | None] | None = None) -> exp.Expr:
        def rewrite(n: exp.Expr) -> exp.Expr:
            if extra is not None:
                replaced = extra(n)
                if replaced is not None:
                    return replaced
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return self.column(n)
            return n

        return node.copy().transform(rewrite, copy=False)

    def column(self, column: exp.Column) -> exp.Expr:
        """A column reference resolved; ``a.b.c`` may also read a field of a ROW column (``bid.price``
        where ``bid`` is a column, or ``T.bid.price``), as in Flink: a qualifier that names no
        relation in scope names a column."""
        parts = [part.name for part in column.parts]
        qualified = len(parts) > 1 and parts[0] in self.relations
        if not qualified and len(parts) > 1 and self._has_column(parts[0]):
            return field_access(self._unqualified(parts[0]), parts[1:])
        if len(parts) > 2 and qualified:
            return field_access(self._qualified(exp.column(parts[1], table=parts[0])), parts[2:])
        return self._qualified(column) if column.table else self._unqualified(column.name)

    def branch(self, column: exp.Column) -> exp.Column:
        """A column of a join's input, read as the input's SELECT names it (``P.id``)."""
        parts = [part.name for part in column.parts]
        if len(parts) == 2 and parts[0] in self.relations:
            alias, name = parts
        elif len(parts) == 1:
            name = parts[0]
            owners = [a for a, r in self.relations.items() if a is not None and name in r.names]
            if len(owners) != 1:
                problem = "is ambiguous" if owners else "not found"
                raise SQLModelError(f"column {name!r} {problem}", clause=column.sql(dialect="flink"))
            alias = owners[0]
        else:
            raise SQLModelError("a join's condition and outputs read its inputs' columns as alias.column",
                                clause=column.sql(dialect="flink"))
        if name not in self.relations[alias].names:
            raise SQLModelError(f"column {name!r} not found in {alias!r}", clause=column.sql(dialect="flink"))
        return branch_column(alias, name)

    def _has_column(self, name: str) -> bool:
        return any(name in r.columns for r in self.relations.values())

    def _qualified(self, column: exp.Column) -> exp.Expr:
        name = column.name
        relation = self.relations.get(column.table)
        if relation is None:
            raise SQLModelError(f"unknown table or alias {column.table!r}", clause=column.sql(dialect="flink"))
        found = relation.lookup(name)
        if found is None:
            raise SQLModelError(f"column {name!r} not found in {column.table!r}", clause=column.sql(dialect="flink"))
        return found.copy()

    def _unqualified(self, name: str) -> exp.Expr:
        matches = [r.columns[name] for r in self.relations.values() if name in r.columns]
        if len(matches) > 1:
            raise SQLModelError(f"column {name!r} is ambiguous", clause=name)
        if matches:
            return matches[0].copy()
        for relation in self.relations.values():
            found = relation.lookup(name)
            if found is not None:
                return found.copy()
        raise SQLModelError(f"column {name!r} not found", clause=name)

    @property
    def main(self) -> Relation:
        return next(iter(self.relations.values()))


def field_access(row: exp.Expr, names: list[str]) -> exp.Expr:
    """Field access into a ROW value: ``row.a.b``."""
    for name in names:
        row = exp.Dot(this=row, expression=exp.to_identifier(name, quoted=needs_quotes(name)))
    return row


def conjuncts(predicate: exp.Expr) -> list[exp.Expr]:
    """The AND-ed parts of a predicate."""
    if isinstance(predicate, exp.And):
        return conjuncts(predicate.this) + conjuncts(predicate.expression)
    if isinstance(predicate, exp.Paren):
        return conjuncts(predicate.this)
    return [predicate]

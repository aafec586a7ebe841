"""The SQL type of a resolved expression, from the declared column types (no engine needed).

The state layout places MIN/MAX over text in slots of their own (:mod:`analyzer.layout`), so the
analyzer, the gate and the job must agree on which aggregates read text before any engine runs.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.annotate_types import annotate_types

from analyzer.dialect import Flink
from analyzer.model import JobModel


def value_type(model: JobModel, expr: exp.Expression) -> exp.DataType:
    """``expr``'s type; UNKNOWN where a column's type is not declared or a function is opaque.

    Resolved expressions name source columns (``Table.column``). Each is replaced by a typed null
    (``CAST(NULL AS <declared type>)``) and sqlglot's type inference does the rest."""
    declared = {(t.name, c.name): c.type for t in model.tables.values() for c in t.columns if c.type}

    def typed(node: exp.Expression) -> exp.Expression:
        text = declared.get((node.table, node.name)) if isinstance(node, exp.Column) else None
        if text is None:
            return node
        try:
            return exp.Cast(this=exp.null(), to=exp.DataType.build(text, dialect=Flink))
        except ParseError:
            return node  # a type sqlglot cannot read stays unknown

    return annotate_types(expr.copy().transform(typed), dialect=Flink).type or exp.DataType.build("UNKNOWN")


def is_text(model: JobModel, expr: exp.Expression) -> bool:
    return value_type(model, expr).this in exp.DataType.TEXT_TYPES

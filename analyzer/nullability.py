"""Whether Flink types an expression NOT NULL, from the declared columns.

Flink's planner carries NOT NULL through a query's types, and a type can show in a value: Flink
types the ``LISTAGG`` of a NOT NULL argument NOT NULL, so a window whose rows its ``FILTER`` all
dropped writes ``''`` where one of a nullable argument writes NULL. The rules here are those
probed against Flink 2.3 (a ``LISTAGG(x) FILTER`` that drops every row, written to a JSON sink);
an expression they do not cover is taken as nullable, as most of Flink's functions type their
result (``SUBSTRING``, ``REVERSE``, ``LEFT``, ``NULLIF``, ``REGEXP_EXTRACT``, ``TRY_CAST`` always).
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

from stategate.analyzer.model import Table

#: Operators and functions whose result is NOT NULL where every operand is (Calcite's
#: ``*_NULLABLE`` return types), as Flink 2.3 types them.
_OF_OPERANDS: tuple[type[exp.Expr], ...] = (
    exp.Paren, exp.Cast, exp.Neg, exp.Not, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.EQ, exp.NEQ, exp.GT,
    exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Like, exp.In, exp.Between, exp.DPipe, exp.Concat, exp.Upper,
    exp.Lower, exp.Trim, exp.Replace, exp.Pad, exp.Initcap, exp.RegexpReplace, exp.Repeat, exp.ToBase64, exp.MD5,
    exp.Length, exp.StrPosition, exp.Abs, exp.Pow, exp.Floor, exp.Ceil, exp.Round, exp.Trunc, exp.Sign, exp.Greatest,
)


def never_null(expr: exp.Expr, tables: Mapping[str, Table]) -> bool:
    """Whether Flink types ``expr`` (resolved to its tables' columns) NOT NULL."""
    if isinstance(expr, exp.Null):
        return False
    if isinstance(expr, (exp.Literal, exp.Boolean, exp.Is)):
        return True  # a value, or IS [NOT] NULL
    if isinstance(expr, exp.Column):
        table = tables.get(expr.table)
        column = table.column(expr.name) if table is not None else None
        if column is None:
            return False
        return column.not_null or (column.computed is not None and never_null(column.computed.expr, tables))
    if isinstance(expr, exp.Coalesce):  # COALESCE, IFNULL: NOT NULL where any operand is
        return any(never_null(operand, tables) for operand in (expr.this, *expr.expressions))
    if isinstance(expr, exp.If):
        return expr.args.get("false") is not None and never_null(expr.args["true"], tables) \
            and never_null(expr.args["false"], tables)
    if isinstance(expr, exp.Case):
        return expr.args.get("default") is not None and never_null(expr.args["default"], tables) \
            and all(never_null(branch.args["true"], tables) for branch in expr.args["ifs"])
    if isinstance(expr, _OF_OPERANDS) and not isinstance(expr, exp.TryCast):
        return all(never_null(operand, tables) for operand in _operands(expr))
    return False


def _operands(expr: exp.Expr) -> list[exp.Expr]:
    """The values an operator or function reads (a CAST's value, not its type)."""
    if isinstance(expr, exp.Cast):
        return [expr.this]
    return [node for node in expr.iter_expressions() if not isinstance(node, exp.DataType)]

"""Resolved model expressions → Spark SQL column expressions.

The model's expressions are already resolved to source columns (``Bid.price``) or to the columns a
stage produces (keys, aggregates, window attributes). Translating is a rewrite of those references to
the DataFrame's column names, then sqlglot's own Spark generator: the SQL is not parsed again.
"""

from __future__ import annotations

from typing import Mapping

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F
from sqlglot import exp

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import sql_key


#: Operators whose result type depends on their operands' types. Flink types an integer literal as
#: an INT (a BIGINT past its range); Spark gives one the fewest digits it needs when it meets a
#: DECIMAL, so ``price / 3`` of a DECIMAL(10, 2) would keep 6 digits of scale on Spark against
#: Flink's 13. Cast, the literal is an INT on both.
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_INT, _BIGINT, _INT_MAX = exp.DType.INT, exp.DType.BIGINT, 2**31 - 1


def to_spark_sql(expr: exp.Expr, columns: Mapping[str, str]) -> str:
    """Spark SQL text of ``expr`` with every sub-expression found in ``columns`` (by canonical key)
    replaced by a reference to that DataFrame column."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        key = sql_key(node)
        if key in columns:
            return exp.column(columns[key], quoted=True)
        if isinstance(node, exp.Column):
            raise SQLModelError(f"{node.sql(dialect='flink')} is not available at this point of the query",
                                clause=expr.sql(dialect="flink"))
        if isinstance(node, exp.Literal) and node.is_int and isinstance(node.parent, _ARITHMETIC):
            return exp.cast(node.copy(), _INT if abs(int(node.name)) <= _INT_MAX else _BIGINT)
        return node

    rewritten = expr.copy().transform(rewrite, copy=False)
    return rewritten.sql(dialect="spark")


def to_column(expr: exp.Expr, columns: Mapping[str, str]) -> SparkColumn:
    return F.expr(to_spark_sql(expr, columns))

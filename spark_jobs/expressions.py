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
        return node

    rewritten = expr.copy().transform(rewrite, copy=False)
    return rewritten.sql(dialect="spark")


def to_column(expr: exp.Expr, columns: Mapping[str, str]) -> SparkColumn:
    return F.expr(to_spark_sql(expr, columns))

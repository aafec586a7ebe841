"""Flink's NOT NULL, as the gate types it: each expression below was written, in Flink 2.3, as
``LISTAGG(expr) FILTER (WHERE n > 100)`` into a JSON sink over the table ``DDL`` declares; ``''``
there is a NOT NULL argument, ``null`` a nullable one. ``tests/data/flink/not_null_lists.json``
holds the engine to the same over every window kind."""

from __future__ import annotations

import pytest

from stategate.analyzer import build
from stategate.analyzer.nullability import never_null

DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), qty INT, n INT NOT NULL, supplier_id STRING, k STRING NOT NULL,\n"
       "  code STRING, doubled AS n * 2,\n  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND,\n"
       "  PRIMARY KEY (code) NOT ENFORCED\n) WITH ('connector' = 'filesystem', 'path' = '/in', 'format' = 'csv');\n")

NOT_NULL = ["k", "'lit'", "COALESCE(supplier_id, 'x')", "COALESCE(supplier_id, k)", "IFNULL(supplier_id, 'x')",
            "UPPER(k)", "TRIM(k)", "RTRIM(k)", "CONCAT(k, 'a')", "k || 'a'", "REPLACE(k, 'a', 'b')", "CAST(n AS STRING)",
            "CAST(n + 1 AS STRING)", "CAST(n / 2 AS STRING)", "CAST(MOD(n, 3) AS STRING)", "CAST(-n AS STRING)",
            "CAST(CHAR_LENGTH(k) AS STRING)", "CASE WHEN n > 1 THEN 'a' ELSE 'b' END", "IF(n > 1, 'a', 'b')",
            "LPAD(k, 4, '0')", "INITCAP(k)", "REGEXP_REPLACE(k, 'a', 'b')", "CAST(n > 1 AS STRING)",
            "CAST(POWER(n, 2) AS STRING)", "CAST(GREATEST(n, 1) AS STRING)", "CAST(supplier_id IS NULL AS STRING)",
            "CAST(n IN (1, 2) AS STRING)", "CAST(k LIKE 'a%' AS STRING)", "CAST(POSITION('a' IN k) AS STRING)",
            "REPEAT(k, 2)", "MD5(k)", "CAST(k AS CHAR(2))",
            # A primary key's column, and a computed column of NOT NULL ones (Flink's planner).
            "code", "CAST(doubled AS STRING)"]
NULLABLE = ["supplier_id", "COALESCE(supplier_id, supplier_id)", "CONCAT(k, supplier_id)", "k || supplier_id",
            "SUBSTRING(k, 2)", "CAST(qty AS STRING)", "CASE WHEN n > 1 THEN 'a' END",
            "CASE WHEN n > 1 THEN k ELSE supplier_id END", "IF(n > 1, 'a', supplier_id)", "REVERSE(k)",
            "REGEXP_EXTRACT(k, 'a')", "SPLIT_INDEX(k, ',', 0)", "CONCAT_WS('-', k, supplier_id)", "TRY_CAST(n AS STRING)",
            "NULLIF(k, 'a')", "LEFT(k, 1)", "CAST(bidtime AS STRING)", "CAST(HOUR(bidtime) AS STRING)"]


def _never_null(argument: str) -> bool:
    model = build(DDL + f"SELECT window_start, LISTAGG({argument}) FILTER (WHERE n > 100) AS a FROM TABLE(TUMBLE("
                        "TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end")
    [aggregate] = model.pipelines[0].aggregate.aggregates
    return never_null(aggregate.args[0].expr, model.tables)


@pytest.mark.parametrize("argument", NOT_NULL)
def test_flink_types_these_not_null(argument: str) -> None:
    assert _never_null(argument)


@pytest.mark.parametrize("argument", NULLABLE)
def test_flink_types_these_nullable(argument: str) -> None:
    assert not _never_null(argument)

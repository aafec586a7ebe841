"""The ``flink`` dialect parses Flink's streaming constructs into typed nodes and prints them back."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from stategate.analyzer.dialect import (
    Descriptor,
    Flink,
    GroupWindow,
    GroupWindowAuxiliary,
    LateralTable,
    WindowTVF,
)

ROUND_TRIP = [
    "SELECT a, SUM(b) FROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY a, window_start, window_end",
    "SELECT * FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))",
    "SELECT * FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))",
    "SELECT * FROM TABLE(SESSION(TABLE Bid PARTITION BY supplier_id, item, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES))",
    "SELECT a, TUMBLE_START(ts, INTERVAL '1' MINUTE), HOP_END(ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE), SESSION_ROWTIME(ts, INTERVAL '1' MINUTE), TUMBLE_PROCTIME(pt, INTERVAL '1' MINUTE) FROM T GROUP BY a, TUMBLE(ts, INTERVAL '1' MINUTE)",
    "CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), pt AS PROCTIME(), WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '/x')",
    "CREATE TEMPORARY VIEW v AS SELECT a FROM t",
    "CREATE TEMPORARY FUNCTION weighted_avg AS 'udfs.WeightedAvg' LANGUAGE PYTHON",
    "SET 'table.exec.emit.early-fire.enabled' = 'true'",
    "INSERT INTO s SELECT a FROM t",
    "SELECT a, c1 FROM t, LATERAL TABLE(SPLIT(c)) AS T(c1, c2)",
    "SELECT a FROM t GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ())",
    "SELECT a FROM t GROUP BY window_start, window_end, ROLLUP (supplier_id)",
    "SELECT a FROM t GROUP BY window_start, window_end, CUBE (supplier_id, item)",
    "SELECT COUNT(*) FILTER(WHERE a > 1) FROM t",
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c DESC) AS rk FROM t) WHERE rk <= 3",
    "SELECT `user`, `Count` FROM `Orders`",
    "CREATE TABLE Out (top MULTISET<DECIMAL(10, 2)>, tops ARRAY<MULTISET<INT>>, list INT) WITH ('connector' = 'blackhole')",
]


@pytest.mark.parametrize("sql", ROUND_TRIP)
def test_round_trip(sql: str) -> None:
    assert sqlglot.transpile(sql, read="flink", write="flink")[0] == sql


def test_registered_by_name_and_entry_point() -> None:
    from importlib.metadata import entry_points

    assert sqlglot.Dialect.get_or_raise("flink") is not None
    assert any(ep.name == "flink" and ep.value == "stategate.analyzer.dialect:Flink"
               for ep in entry_points(group="sqlglot.dialects"))


def test_window_tvf_is_a_typed_node() -> None:
    tree = sqlglot.parse_one(ROUND_TRIP[3], read=Flink)
    tvf = tree.find(WindowTVF)
    assert tvf.args["kind"].name == "SESSION"
    assert [k.name for k in tvf.args["table"].args["partition_by"]] == ["supplier_id", "item"]
    assert isinstance(tvf.args["descriptor"], Descriptor)
    assert isinstance(tvf.expressions[0], exp.Interval)


def test_legacy_windows_and_auxiliaries_are_typed_nodes() -> None:
    tree = sqlglot.parse_one(ROUND_TRIP[4], read=Flink)
    assert tree.find(GroupWindow).args["kind"].name == "TUMBLE"
    props = [a.args["property"].name for a in tree.find_all(GroupWindowAuxiliary)]
    assert props == ["START", "END", "ROWTIME", "PROCTIME"]


def test_ddl_keeps_watermark_computed_columns_and_quoted_options() -> None:
    tree = sqlglot.parse_one(ROUND_TRIP[5], read=Flink)
    assert tree.find(exp.WatermarkColumnConstraint).this.name == "bidtime"
    assert tree.find(exp.ComputedColumnConstraint).this.name.upper() == "PROCTIME"
    assert "'connector' = 'filesystem'" in tree.sql(dialect=Flink)


def test_identifiers_keep_their_case() -> None:
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    tree = normalize_identifiers(sqlglot.parse_one("SELECT MyCol FROM MyTable", read=Flink), dialect=Flink)
    assert tree.sql(dialect=Flink) == "SELECT MyCol FROM MyTable"


def test_lateral_table_is_a_typed_node() -> None:
    tree = sqlglot.parse_one(ROUND_TRIP[10], read=Flink)
    lateral = tree.find(LateralTable)
    assert lateral.this.name.lower() == "split"
    assert [c.name for c in lateral.args["alias"].columns] == ["c1", "c2"]

"""Constructs the Spark job cannot run fail at compile time, naming the construct and the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from stategate.analyzer import SQLModelError
from stategate.spark_jobs.job import run
from tests.spark_jobs.helpers import bid_ddl, collect, seed_bids

WINDOW = "TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))"
SQL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "pages" / "sql.md"

REFUSED = [
    ("SELECT item, COUNT(*) FROM Bid GROUP BY item", "GROUP BY without a window"),
    ("SELECT item, price FROM Bid", "no window aggregation"),
    (f"SELECT window_start, STDDEV_POP(price) FROM {WINDOW} GROUP BY window_start, window_end",
     "is not supported (supported: COUNT, SUM, MIN, MAX, AVG)"),
    (f"SELECT window_start, weighted_avg(price, price) FROM {WINDOW} GROUP BY window_start, window_end",
     "user-defined aggregate"),
    # Not a Flink function, so the analyzer cannot tell it yields text; Spark's type decides the
    # buffer field, and the two must agree.
    (f"SELECT window_start, MAX(SOUNDEX(item)) FROM {WINDOW} GROUP BY window_start, window_end",
     "MAX(SOUNDEX(item)): its argument is string on Spark"),
    ("SELECT window_start, COUNT(DISTINCT item) FROM TABLE(SESSION(TABLE Bid, DESCRIPTOR(bidtime), "
     "INTERVAL '2' MINUTES)) GROUP BY window_start, window_end", "DISTINCT aggregates over SESSION"),
    ("SELECT window_start, supplier_id, SUM(price) FROM TABLE(SESSION(TABLE Bid, DESCRIPTOR(bidtime), "
     "INTERVAL '2' MINUTES)) GROUP BY window_start, window_end, supplier_id", "PARTITION BY keys must be the GROUP BY"),
    ("SELECT window_start, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(item), INTERVAL '10' MINUTES)) "
     "GROUP BY window_start, window_end", "must be the rowtime column bidtime of Bid or a processing-time"),
    (f"SELECT window_start, SUM(price) FROM (SELECT * FROM {WINDOW}, LATERAL TABLE(split(item)) AS T(x)) "
     "GROUP BY window_start, window_end", "LATERAL TABLE(split)"),
    ("SET 'table.exec.emit.early-fire.enabled' = 'true';\n"
     f"SELECT window_start, SUM(price) FROM {WINDOW} GROUP BY window_start, window_end", "early-fire"),
    (f"SELECT window_start, SUM(price) FROM {WINDOW.replace('Bid', 'Nope')} GROUP BY window_start, window_end",
     "not declared with CREATE TABLE"),
    (f"SELECT a.window_start, SUM(a.price) FROM {WINDOW} AS a JOIN Bid b ON a.item = b.item "
     "GROUP BY a.window_start, a.window_end", "not supported on Spark: a join other than a window join"),
    ("CREATE VIEW hourly AS SELECT window_time AS t, SUM(price) AS total FROM TABLE(HOP(TABLE Bid, "
     "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '60' MINUTES)) GROUP BY window_start, window_end, "
     "window_time;\nSELECT window_start, MAX(total) FROM TABLE(TUMBLE(TABLE hourly, DESCRIPTOR(t), "
     "INTERVAL '1' HOUR)) GROUP BY window_start, window_end", "a window over the results of a HOP window"),
]


@pytest.mark.parametrize("sql, message", REFUSED)
def test_unsupported_construct_is_named(spark, tmp_path, sql: str, message: str) -> None:
    source = seed_bids(tmp_path)
    ddl = bid_ddl(source).replace("supplier_id STRING,", "supplier_id STRING, pt AS PROCTIME(),")
    with pytest.raises(SQLModelError) as caught:
        collect(spark, ddl + sql, tmp_path / "checkpoint")
    assert message in str(caught.value)
    assert not (tmp_path / "checkpoint").exists(), "nothing is written for a job that does not compile"


def test_insert_into_an_undeclared_sink(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = f"INSERT INTO Out SELECT window_start, SUM(price) FROM {WINDOW} GROUP BY window_start, window_end"
    with pytest.raises(SQLModelError, match="INSERT INTO Out: the sink table is not declared"):
        collect(spark, bid_ddl(source) + sql, tmp_path / "checkpoint", pipeline="Out")


def test_a_partitioned_sink_is_refused_before_anything_is_written(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sink = ("CREATE TABLE Out (item STRING, total DECIMAL(38, 2)) PARTITIONED BY (item)\n"
            f"WITH ('connector' = 'filesystem', 'path' = '{tmp_path / 'out'}', 'format' = 'parquet');\n")
    sql = bid_ddl(source) + sink + f"INSERT INTO Out SELECT item, SUM(price) FROM {WINDOW} " \
        "GROUP BY item, window_start, window_end"
    with pytest.raises(SQLModelError, match=r"^job\.sql:\d+: table Out: a PARTITIONED BY sink is not supported"):
        run(spark, sql, tmp_path / "checkpoint", source="job.sql")
    assert not (tmp_path / "checkpoint").exists() and not (tmp_path / "out").exists()


def test_sink_width_must_match(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = ("CREATE TABLE Out (ws TIMESTAMP(3)) WITH ('connector' = 'print');\n"
           f"INSERT INTO Out SELECT window_start, SUM(price) FROM {WINDOW} GROUP BY window_start, window_end")
    with pytest.raises(SQLModelError, match="the query has 2 columns, the table 1"):
        collect(spark, bid_ddl(source) + sql, tmp_path / "checkpoint", pipeline="Out")


def test_every_refusal_is_in_the_documentation_with_its_message() -> None:
    """The SQL page of the docs lists what the job refuses with the message the user gets: each
    message tested here appears there word for word."""
    page = SQL_PAGE.read_text()
    messages = [message for _, message in REFUSED]
    messages += ["INSERT INTO Out: the sink table is not declared", "the query has 2 columns, the table 1",
                 "table Out: a PARTITIONED BY sink is not supported on Spark"]
    assert [message for message in messages if message not in page] == []

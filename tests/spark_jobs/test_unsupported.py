"""Constructs the Spark job cannot run fail at compile time, naming the construct and the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from stategate.analyzer import SQLModelError
from stategate.spark_jobs.job import run
from tests.analyzer.test_runnable import REFUSED, WINDOW
from tests.spark_jobs.helpers import bid_ddl, collect, seed_bids

SQL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "pages" / "sql.md"


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

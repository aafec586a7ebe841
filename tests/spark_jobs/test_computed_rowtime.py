"""A computed rowtime (``ts AS <expression>, WATERMARK FOR ts AS ...``, as Nexmark's source declares
its ``dateTime``): the job computes the column, watermarks it and windows by it, as Flink does."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd

from tests.spark_jobs.helpers import BID_COLUMNS, DATA, collect, seed_bids

#: Bids of at most 3.00 count as placed five minutes earlier.
COMPUTED = "ts AS CASE WHEN price > 3 THEN bidtime ELSE bidtime - INTERVAL '5' MINUTE END"


def test_windows_follow_the_computed_rowtime(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = (f"CREATE TABLE Bid ({BID_COLUMNS},\n  {COMPUTED},\n  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n"
           f"WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv');\n"
           "SELECT window_start, window_end, supplier_id, SUM(price) AS total, COUNT(*) AS bids\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), INTERVAL '10' MINUTES))\n"
           "GROUP BY supplier_id, window_start, window_end;")

    bids = pd.read_csv(DATA / "bids" / "bids.csv", names=["bidtime", "price", "item", "supplier_id"],
                       parse_dates=["bidtime"], converters={"price": Decimal})
    bids["start"] = bids.bidtime.where(bids.price > 3, bids.bidtime - pd.Timedelta(minutes=5)).dt.floor("10min")
    expected = sorted(
        (str(start), str(start + pd.Timedelta(minutes=10)), supplier, str(group.price.sum()), str(len(group)))
        for (start, supplier), group in bids.groupby(["start", "supplier_id"]))
    assert len(expected) == 3, "the computed times move a bid into another window than its bidtime's"
    assert collect(spark, sql, tmp_path / "checkpoint") == expected


def test_windows_follow_a_rowtime_computed_from_an_epoch(spark, tmp_path) -> None:
    """``ts AS TO_TIMESTAMP_LTZ(ms, 3)`` over milliseconds since 1970, the way a Flink source
    declares an event time that arrives as a number; Spark's function of that name parses a text."""
    bids = pd.read_csv(DATA / "bids" / "bids.csv", names=["bidtime", "price", "item", "supplier_id"],
                       parse_dates=["bidtime"], converters={"price": Decimal})
    bids["ms"] = (bids.bidtime - pd.Timestamp("1970-01-01")) // pd.Timedelta(milliseconds=1) + 1234
    source = tmp_path / "bids"
    source.mkdir()
    (source / "0-bids.csv").write_text("".join(f"{ms},{price},{supplier}\n" for ms, price, supplier
                                               in zip(bids.ms, bids.price, bids.supplier_id)))
    (source / "9-closer.csv").write_text("1587000000000,0.00,closer\n")
    sql = ("CREATE TABLE Bid (ms BIGINT, price DECIMAL(10, 2), supplier_id STRING,\n"
           "  ts AS TO_TIMESTAMP_LTZ(ms, 3),\n  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n"
           f"WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv');\n"
           "SELECT window_start, window_end, supplier_id, SUM(price) AS total, MAX(ts) AS last\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), INTERVAL '10' MINUTES))\n"
           "GROUP BY supplier_id, window_start, window_end;")

    bids["at"] = bids.bidtime + pd.Timedelta(milliseconds=1234)
    bids["start"] = bids["at"].dt.floor("10min")
    expected = sorted((str(start), str(start + pd.Timedelta(minutes=10)), supplier, str(group.price.sum()),
                       str(group["at"].max().to_pydatetime()))
                      for (start, supplier), group in bids.groupby(["start", "supplier_id"]))
    assert collect(spark, sql, tmp_path / "checkpoint") == expected

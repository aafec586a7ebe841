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

"""Nexmark's source shape (tests.nexmark): one stream of events with a nested ROW per kind, the kind's
fields read as ``bid.price``, a rowtime computed from them, and a view per kind. Its windows equal a
reference computed by pandas over the same events."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd

from tests import nexmark
from tests.spark_jobs.helpers import collect

QUERY = """SELECT auction, window_start, window_end, COUNT(*) AS bids, SUM(price) AS total
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;"""


def test_hop_windows_over_nested_bid_rows(spark, tmp_path) -> None:
    generated = nexmark.generate(200, step=timedelta(milliseconds=250))
    source = nexmark.write(generated, tmp_path / "events")

    bids = pd.DataFrame(nexmark.rows(generated, nexmark.BID))
    expected = []
    for end in pd.date_range(nexmark.START, nexmark.START + timedelta(seconds=80), freq="2s"):
        inside = bids[(bids.dateTime >= end - timedelta(seconds=10)) & (bids.dateTime < end)]
        for auction, group in inside.groupby("auction"):
            expected.append((str(auction), str(end - timedelta(seconds=10)), str(end), str(len(group)),
                             str(group.price.sum())))
    assert len(expected) > 100
    sql = nexmark.SOURCE.replace("{events}", str(source)) + QUERY
    assert collect(spark, sql, tmp_path / "checkpoint") == sorted(expected)

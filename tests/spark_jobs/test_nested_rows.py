"""Nexmark's source shape: one stream of events with a nested ROW per kind, the kind's fields read as
``bid.price``, a rowtime computed from them, and a view per kind. Its windows equal a reference
computed by pandas over the same events."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta

import pandas as pd

from tests.spark_jobs.helpers import collect

START = datetime(2020, 4, 15, 8, 0, 0)
DDL = """CREATE TABLE datagen (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, dateTime TIMESTAMP(3)>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, dateTime TIMESTAMP(3)>,
  dateTime AS CASE WHEN event_type = 0 THEN person.dateTime ELSE bid.dateTime END,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json');
CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, bid.channel, dateTime FROM datagen WHERE event_type = 2;
"""
QUERY = """SELECT auction, window_start, window_end, COUNT(*) AS bids, SUM(price) AS total
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;"""


def events(count: int, seed: int = 11) -> list[dict]:
    """Persons and bids, a few every second, in time order; the last one far ahead closes every window."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        at = (START + timedelta(milliseconds=250 * i)).isoformat(sep=" ", timespec="milliseconds")
        if rng.random() < 0.2:
            out.append({"event_type": 0, "person": {"id": i, "name": f"p{i}", "dateTime": at}})
        else:
            out.append({"event_type": 2, "bid": {"auction": rng.randrange(4), "bidder": rng.randrange(50),
                                                 "price": rng.randrange(1, 1000), "channel": "web", "dateTime": at}})
    far = (START + timedelta(days=1)).isoformat(sep=" ", timespec="milliseconds")
    out.append({"event_type": 0, "person": {"id": -1, "name": "closer", "dateTime": far}})
    return out


def test_hop_windows_over_nested_bid_rows(spark, tmp_path) -> None:
    source = tmp_path / "events"
    source.mkdir()
    generated = events(200)
    (source / "events.json").write_text("".join(json.dumps(e) + "\n" for e in generated))

    bids = pd.DataFrame([e["bid"] for e in generated if e["event_type"] == 2])
    bids["dateTime"] = pd.to_datetime(bids["dateTime"])
    expected = []
    for end in pd.date_range(START, START + timedelta(seconds=80), freq="2s"):
        inside = bids[(bids.dateTime >= end - timedelta(seconds=10)) & (bids.dateTime < end)]
        for auction, group in inside.groupby("auction"):
            expected.append((str(auction), str(end - timedelta(seconds=10)), str(end), str(len(group)),
                             str(group.price.sum())))
    assert len(expected) > 100
    assert collect(spark, DDL.format(path=source) + QUERY, tmp_path / "checkpoint") == sorted(expected)

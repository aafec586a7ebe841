"""Processing-time windows on Spark (spark_jobs.proctime): a record's time is its micro-batch's start,
a window closes once a micro-batch starts after its end, and a clock closes it on a quiet stream.

Processing time is not reproducible, so the tests assert what it leaves deterministic: every
record counted once over all windows, windows of the declared length on the clock's grid."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta

from stategate.spark_jobs.job import run
from tests import nexmark
from tests.spark_jobs.helpers import collect


def wait_past_next(seconds: int) -> None:
    """Sleep until the clock has passed the end of the window of ``seconds`` holding now."""
    now = time.time()
    time.sleep(seconds - now % seconds + 0.2)


def test_nexmark_q12_counts_every_bid_once_in_windows_the_clock_closes(spark, tmp_path) -> None:
    events = nexmark.generate(400, close=False)
    source = nexmark.write(events, tmp_path / "events")
    sql = nexmark.script("q12", source, tmp_path / "out")
    first = collect(spark, sql, tmp_path / "checkpoint", pipeline="discard_sink")
    # Under available-now a run ends once its input is read; the windows the clock has not passed stay
    # open in the checkpoint, and the next run closes them (without new input: a tick of the clock).
    wait_past_next(10)
    second = collect(spark, sql, tmp_path / "checkpoint", pipeline="discard_sink")
    windows = first + second
    assert second, "the windows still open at the end of the first run close in the next one"

    totals: Counter = Counter()
    for bidder, count, start, end in windows:
        assert datetime.fromisoformat(end) - datetime.fromisoformat(start) == timedelta(seconds=10)
        assert datetime.fromisoformat(start).second % 10 == 0
        totals[int(bidder)] += int(count)
    assert totals == Counter(bid["bidder"] for bid in nexmark.rows(events, nexmark.BID))
    assert len({(bidder, start) for bidder, _, start, _ in windows}) == len(windows), "a window is emitted once"


def test_hop_over_a_declared_proctime_column_closes_on_a_quiet_stream(spark, tmp_path) -> None:
    """Under a processing-time trigger the windows close without any record after them: the clock
    moves the processing time on."""
    events = nexmark.generate(150, close=False)
    source = nexmark.write(events, tmp_path / "events")
    ddl = nexmark.SOURCE.replace("{events}", str(source)).replace(
        "    dateTime AS", "    p_time AS PROCTIME(),\n    dateTime AS")
    sql = ddl + ("SELECT bid.bidder, COUNT(*) AS bids, window_start, window_end, window_time FROM TABLE(HOP(TABLE "
                 "nexmark, DESCRIPTOR(p_time), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) WHERE event_type = 2 "
                 "GROUP BY bid.bidder, window_start, window_end, window_time")
    rows: list = []
    result = run(spark, sql, tmp_path / "checkpoint", trigger="processing-time=500 milliseconds",
                 writers={"select#1": lambda df, _: rows.extend(df.collect())}, wait=False)
    expected = Counter(bid["bidder"] for bid in nexmark.rows(events, nexmark.BID))
    try:
        deadline = time.monotonic() + 60
        while sum(row.bids for row in rows) < 2 * sum(expected.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        for query in result.queries:
            query.stop()
    totals: Counter = Counter()
    for row in rows:
        assert row.window_end - row.window_start == timedelta(seconds=2)
        assert row.window_time == row.window_end - timedelta(milliseconds=1)
        totals[row.bidder] += row.bids
    # Every bid counts in the two windows of 2 s that hold its second.
    assert totals == Counter({bidder: 2 * n for bidder, n in expected.items()})


def test_legacy_group_window_over_proctime_in_a_subquery(spark, tmp_path) -> None:
    """q12's earlier published form: PROCTIME() in a subquery, GROUP BY TUMBLE(p_time, ...), and
    *_PROCTIME written as the window's last instant."""
    events = nexmark.generate(100, close=False)
    sql = nexmark.SOURCE.replace("{events}", str(nexmark.write(events, tmp_path / "events"))) + """
SELECT B.bidder, count(*) AS bid_count, TUMBLE_START(B.p_time, INTERVAL '2' SECOND) AS starttime,
       TUMBLE_END(B.p_time, INTERVAL '2' SECOND) AS endtime, TUMBLE_PROCTIME(B.p_time, INTERVAL '2' SECOND) AS pt
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '2' SECOND);"""
    windows = collect(spark, sql, tmp_path / "checkpoint")
    wait_past_next(2)
    windows += collect(spark, sql, tmp_path / "checkpoint")
    totals: Counter = Counter()
    for bidder, count, start, end, proctime in windows:
        assert datetime.fromisoformat(proctime) == datetime.fromisoformat(end) - timedelta(milliseconds=1)
        totals[int(bidder)] += int(count)
    assert totals == Counter(bid["bidder"] for bid in nexmark.rows(events, nexmark.BID))


def test_a_window_join_of_processing_time_windows(spark, tmp_path) -> None:
    """Each side's windows on the processing-time clock: read in one micro-batch, every person and
    auction share one window, so the join finds every seller who registered."""
    events = nexmark.generate(300, close=False)
    ddl = nexmark.SOURCE.replace("{events}", str(nexmark.write(events, tmp_path / "events"))).replace(
        "    dateTime AS", "    p_time AS PROCTIME(),\n    dateTime AS")
    side = """SELECT {key} AS {name}, window_start AS starttime, window_end AS endtime
 FROM TABLE(TUMBLE(TABLE nexmark, DESCRIPTOR(p_time), INTERVAL '2' SECOND)) WHERE event_type = {kind}
 GROUP BY {key}, window_start, window_end"""
    sql = ddl + (f"SELECT P.id, P.starttime FROM ({side.format(key='person.id', name='id', kind=0)}) P\n"
                 f"JOIN ({side.format(key='auction.seller', name='seller', kind=1)}) A\n"
                 "ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime")
    rows = collect(spark, sql, tmp_path / "checkpoint")
    wait_past_next(2)
    rows += collect(spark, sql, tmp_path / "checkpoint")
    sellers = {row["seller"] for row in nexmark.rows(events, nexmark.AUCTION)}
    persons = {row["id"] for row in nexmark.rows(events, nexmark.PERSON)}
    assert sorted(int(row[0]) for row in rows) == sorted(sellers & persons)
    assert len({row[1] for row in rows}) == 1, "one micro-batch, one processing-time window"

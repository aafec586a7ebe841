"""Nexmark's windowed queries as published (tests.nexmark), on Spark, against references computed by
pandas over the same generated events; and restarts of a window join on real checkpoints."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from stategate.analyzer import Verdict
from stategate.spark_jobs.guard import CheckpointRefused
from tests import nexmark
from tests.spark_jobs.helpers import collect, collect_run
from tests.spark_jobs.test_guard import snapshot

TEN = timedelta(seconds=10)


@pytest.fixture(scope="module")
def events() -> list[dict]:
    return nexmark.generate(400)


def run_query(spark, query: str, events: list[dict], tmp_path: Path, edit=lambda sql: sql, **options) -> list[tuple]:
    source = nexmark.write(events, tmp_path / "events")
    sql = edit(nexmark.script(query, source, tmp_path / "out"))
    return collect(spark, sql, tmp_path / "checkpoint", pipeline=nexmark.QUERIES[query][0], **options)


def text(*values) -> tuple:
    return tuple("NULL" if pd.isna(v) else str(v) for v in values)


def frame(events: list[dict], kind: int) -> pd.DataFrame:
    return pd.DataFrame(nexmark.rows(events, kind))


def tumbles(times: pd.Series) -> pd.Series:
    return times.dt.floor("10s")


# ------------------------------------------------------------------------------ q11 user sessions
def test_q11_user_sessions(spark, tmp_path) -> None:
    events = nexmark.generate(400, step=timedelta(seconds=1))  # bidders pause longer than the gap
    expected = []
    for bidder, group in frame(events, nexmark.BID).groupby("bidder"):
        times = sorted(group.dateTime)
        start = last = times[0]
        count = 1
        for at in times[1:]:
            if at - last > TEN:  # Flink merges sessions whose gaps touch
                expected.append(text(bidder, count, start, last + TEN))
                start, count = at, 0
            last = at
            count += 1
        expected.append(text(bidder, count, start, last + TEN))
    assert len(expected) > 100
    assert run_query(spark, "q11", events, tmp_path) == sorted(expected)


# ------------------------------------------------------------------------------ q8 new users (window join)
def q8_reference(events: list[dict], how: str = "inner") -> list[tuple]:
    persons = frame(events, nexmark.PERSON)
    persons = persons[persons.id >= 0].assign(starttime=lambda f: tumbles(f.dateTime))
    persons = persons[["id", "name", "starttime"]].drop_duplicates().astype({"id": "Int64"})
    auctions = frame(events, nexmark.AUCTION).assign(starttime=lambda f: tumbles(f.dateTime))
    auctions = auctions[["seller", "starttime"]].drop_duplicates().astype({"seller": "Int64"})
    joined = persons.merge(auctions, left_on=["id", "starttime"], right_on=["seller", "starttime"], how=how)
    return sorted(text(r.id, r.name, r.starttime, r.seller) for r in joined.itertuples())


def test_q8_new_users_window_join(spark, tmp_path, events) -> None:
    expected = [row[:3] for row in q8_reference(events)]
    assert len(expected) > 10
    assert run_query(spark, "q8", events, tmp_path) == sorted(expected)


@pytest.mark.parametrize("side, how", [("LEFT", "left"), ("RIGHT", "right"), ("FULL OUTER", "outer")])
def test_outer_window_joins_emit_unmatched_windows_once(spark, tmp_path, events, side: str, how: str) -> None:
    def outer(sql: str) -> str:
        return sql.replace("SELECT P.id, P.name, P.starttime\n", "SELECT P.id, P.name, COALESCE(P.starttime, "
                           "A.starttime), A.seller\n").replace(") P\nJOIN (", f") P\n{side} JOIN (") \
            .replace("stime  TIMESTAMP(3)", "stime  TIMESTAMP(3),\n  seller BIGINT")

    expected = q8_reference(events, how)
    assert any("NULL" in row for row in expected) and len(expected) > len(q8_reference(events))
    assert run_query(spark, "q8", events, tmp_path, outer) == expected


# ------------------------------------------------------------------------------ q5 hot items
def test_q5_hot_items_join_a_hop_with_its_per_window_maximum(spark, tmp_path, events) -> None:
    bids = frame(events, nexmark.BID)
    expected = []
    last = bids.dateTime.max()
    end = bids.dateTime.min().floor("2s") + timedelta(seconds=2)
    while end - TEN <= last:
        inside = bids[(bids.dateTime >= end - TEN) & (bids.dateTime < end)]
        counts = inside.groupby("auction").size()
        expected += [text(auction, n) for auction, n in counts.items() if n >= counts.max()]
        end += timedelta(seconds=2)
    assert len(expected) > 20
    assert run_query(spark, "q5", events, tmp_path) == sorted(expected)


# ------------------------------------------------------------------------------ q7 highest bid (interval join)
def q7_reference(events: list[dict], slide: timedelta = TEN) -> list[tuple]:
    """Every bid priced at the maximum of a 10 s window (ending on the ``slide`` grid) whose range
    ``[end - 10 s, end]`` holds it."""
    bids = frame(events, nexmark.BID)
    expected = []
    end = bids.dateTime.min().floor(f"{slide.seconds}s") + slide
    while end - TEN <= bids.dateTime.max():
        inside = bids[(bids.dateTime >= end - TEN) & (bids.dateTime < end)]
        if len(inside):
            matched = bids[(bids.price == inside.price.max()) & (bids.dateTime >= end - TEN) & (bids.dateTime <= end)]
            expected += [text(b.auction, b.bidder, b.price, b.dateTime, b.extra) for b in matched.itertuples()]
        end += slide
    return sorted(expected)


def write_in_order(events: list[dict], directory: Path, files: int) -> Path:
    """``events`` in ``files`` files whose modification times follow the events' order (a directory
    source reads its files by modification time)."""
    size = -(-len(events) // files)
    for i in range(files):
        path = nexmark.write(events[i * size:(i + 1) * size], directory, f"{i:03d}.json") / f"{i:03d}.json"
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
    return directory


@pytest.mark.parametrize("slide", [TEN, timedelta(seconds=5)], ids=["tumble", "hop"])
def test_q7_highest_bid_interval_join_across_micro_batches(spark, tmp_path, slide: timedelta) -> None:
    """Bids arrive a file per micro-batch, so the windows' maxima meet bids retained from earlier
    micro-batches, and bids meet windows retained from earlier ones; HOP windows are assembled."""
    events = nexmark.generate(600, step=timedelta(milliseconds=50))
    source = write_in_order(events, tmp_path / "events", 12)
    sql = nexmark.script("q7", source, tmp_path / "out").replace(
        "'format' = 'json'", "'format' = 'json',\n    'spark.maxFilesPerTrigger' = '1'")
    if slide != TEN:
        sql = sql.replace("TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)",
                          f"HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '{slide.seconds}' SECOND, INTERVAL '10' SECOND)")
        assert "HOP(TABLE bid" in sql
    rows, result = collect_run(spark, sql, tmp_path / "checkpoint", pipeline="nexmark_q7")
    assert len(result.queries[0].recentProgress) >= 12
    expected = q7_reference(events, slide)
    assert len(expected) >= 3
    assert rows == expected


def test_q7_drops_a_late_bid_with_a_warning(spark, tmp_path, caplog) -> None:
    """A bid read after the watermark passed its time meets no window: dropped, and said so."""
    events = nexmark.generate(300, close=False)
    at = (nexmark.START + timedelta(seconds=1)).isoformat(sep=" ", timespec="milliseconds")
    late = {"event_type": nexmark.BID, "bid": {"auction": 1, "bidder": 1000, "price": 1, "extra": "late", "dateTime": at}}
    closer = nexmark.generate(1, close=True)[-1]
    source = write_in_order([*events, late, closer], tmp_path / "events", 3)
    sql = nexmark.script("q7", source, tmp_path / "out").replace(
        "'format' = 'json'", "'format' = 'json',\n    'spark.maxFilesPerTrigger' = '1'")
    with caplog.at_level("WARNING", logger="stategate.late_rows"):
        rows = collect(spark, sql, tmp_path / "checkpoint", pipeline="nexmark_q7")
    assert rows == q7_reference(events)
    assert any("interval join of B" in r.getMessage() and "dropped 1 late row" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------ restarts of a window join
def split(events: list[dict], at: int) -> tuple[list[dict], list[dict]]:
    return events[:at], events[at:]


def with_volume(sql: str) -> str:
    """q5 with an aggregate added to its hot-items window aggregation (not read by the join's output)."""
    return sql.replace("     count(*) AS num,\n     window_start AS starttime,\n     window_end AS endtime\n     FROM",
                       "     count(*) AS num, SUM(price) AS volume,\n     window_start AS starttime,\n"
                       "     window_end AS endtime\n     FROM", 1)


@pytest.mark.parametrize("edit, verdicts", [
    pytest.param(lambda sql: sql, None, id="unchanged"),
    # The branch gives the join a new column, so a human decides (UNKNOWN); its aggregate is PARTIAL.
    pytest.param(with_volume, (Verdict.UNKNOWN, Verdict.PARTIAL), id="aggregate-added"),
])
def test_q5_restarted_continues_its_window_aggregations(spark, tmp_path, events, edit, verdicts) -> None:
    first, second = split(events, 200)
    source = tmp_path / "events"
    sql = nexmark.script("q5", source, tmp_path / "out")
    assert edit is not with_volume or edit(sql) != sql
    nexmark.write(first, source, "1.json")
    rows = collect(spark, sql, tmp_path / "checkpoint", pipeline="nexmark_q5")
    nexmark.write(second, source, "2.json")
    after, result = collect_run(spark, edit(sql), tmp_path / "checkpoint", pipeline="nexmark_q5",
                                accept=Verdict.UNKNOWN)
    if verdicts:
        effects = {f.rule: f.effect for f in result.report.findings}
        assert result.report.verdict is verdicts[0] and effects["stategate.join"] is verdicts[0]
        assert effects["window-tvf.aggregate.added"] is verdicts[1], "the unchanged joined branch adds nothing"
        # Its windows keep Spark's own width, so the aggregate added does not fit them: re-seeded.
        assert set(effects) == {"stategate.join", "window-tvf.aggregate.added", "stategate.layout.reseed"}
    assert sorted(rows + after) == run_query(spark, "q5", events, tmp_path / "whole")


def test_a_window_size_change_in_a_window_join_is_refused(spark, tmp_path, events) -> None:
    source = nexmark.write(events[:200], tmp_path / "events")
    sql = nexmark.script("q8", source, tmp_path / "out")
    collect(spark, sql, tmp_path / "checkpoint", pipeline="nexmark_q8")
    before = snapshot(tmp_path / "checkpoint")
    resized = sql.replace("TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)",
                          "TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '20' SECOND)")
    assert resized != sql
    with pytest.raises(CheckpointRefused, match="verdict INCOMPATIBLE"):
        collect(spark, resized, tmp_path / "checkpoint", pipeline="nexmark_q8", accept=Verdict.UNKNOWN)
    assert snapshot(tmp_path / "checkpoint") == before


def test_a_changed_join_restarts_only_when_a_human_accepts_it(spark, tmp_path, events) -> None:
    """The join keeps no state (spark_jobs.joins), so an accepted UNKNOWN restart continues both window
    aggregations: windows closed before the restart were joined the old way, the rest the new way."""
    first, second = split(events, 200)
    source = tmp_path / "events"
    sql = nexmark.script("q8", source, tmp_path / "out")
    nexmark.write(first, source, "1.json")
    before = collect(spark, sql, tmp_path / "checkpoint", pipeline="nexmark_q8")
    left = sql.replace(") P\nJOIN (", ") P\nLEFT JOIN (")
    nexmark.write(second, source, "2.json")
    with pytest.raises(CheckpointRefused, match="verdict UNKNOWN"):
        collect(spark, left, tmp_path / "checkpoint", pipeline="nexmark_q8")
    after = collect(spark, left, tmp_path / "checkpoint", pipeline="nexmark_q8", accept=Verdict.UNKNOWN)

    # The first run closed the windows ending at or before its watermark (its last event - 4 s).
    watermark = max(e["dateTime"] for e in nexmark.rows(first, nexmark.PERSON) + nexmark.rows(first, nexmark.AUCTION)
                    + nexmark.rows(first, nexmark.BID)) - timedelta(seconds=4)
    closed = [row[:3] for row in q8_reference(events) if pd.Timestamp(row[2]) + TEN <= watermark]
    reopened = [row[:3] for row in q8_reference(events, "left") if pd.Timestamp(row[2]) + TEN > watermark]
    assert before == sorted(closed) and after == sorted(reopened)
    joined_after = [row for row in q8_reference(events) if pd.Timestamp(row[2]) + TEN > watermark]
    assert len(after) > len(joined_after), "the persons without an auction are new rows, from the LEFT join"


"""FULL and PARTIAL changes on real checkpoints: v1 runs on the first part of the data, v2 restarts
from v1's checkpoint on the rest, and the result is compared with an uninterrupted run of v2.

* FULL: after the restart, v2 emits exactly what an uninterrupted v2 emits for the windows still open.
* PARTIAL: retained aggregates equal the uninterrupted run; an added aggregate covers exactly the rows
  that arrived after the restart, for the windows that were open.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.spark_jobs.helpers import CLOSER, bid_ddl, collect

PART_A = [  # bidtime, price, item, supplier; the watermark after it is 08:13:59
    ("2020-04-15 08:01:00", "2.00", "A", "s1"),
    ("2020-04-15 08:03:00", "3.00", "B", "s2"),
    ("2020-04-15 08:06:00", "4.00", "C", "s1"),
    ("2020-04-15 08:12:00", "5.00", "D", "s1"),
    ("2020-04-15 08:14:00", "1.00", "E", "s2"),
]
PART_B = [
    ("2020-04-15 08:15:00", "7.00", "F", "s1"),
    ("2020-04-15 08:18:00", "2.00", "G", "s2"),
    ("2020-04-15 08:24:00", "6.00", "H", "s1"),
    ("2020-04-15 08:31:00", "1.00", "I", "s2"),
]
WATERMARK_AT_RESTART = datetime(2020, 4, 15, 8, 13, 59)

TUMBLE = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)"
HOP = "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)"
CUMULATE = "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)"


def query(select: str, window: str = TUMBLE, group: str = "supplier_id, window_start, window_end") -> str:
    return f"SELECT {select}\nFROM TABLE({window})\nGROUP BY {group};"


V1 = query("window_start, window_end, supplier_id, SUM(price) AS s, MAX(price) AS m")

FULL_CHANGES = {
    "reorder-aggregates": query("window_start, window_end, supplier_id, MAX(price) AS m, SUM(price) AS s"),
    "delete-aggregate": query("window_start, window_end, supplier_id, SUM(price) AS s"),
    "window-attribute-outputs": query("window_start, window_time, supplier_id, SUM(price) AS s, MAX(price) AS m"),
    "move-window-key": query("window_start, window_end, supplier_id, SUM(price) AS s, MAX(price) AS m",
                             group="window_start, window_end, supplier_id"),
    "rename-output-alias": query("window_start, window_end, supplier_id AS who, SUM(price) AS total, MAX(price) AS m"),
}


def write(directory: Path, name: str, rows: list[tuple[str, ...]], closer: bool = False) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join(",".join(r) + "\n" for r in rows) + (CLOSER if closer else "")
    (directory / name).write_text(text)


def restart(spark, tmp: Path, v1: str, v2: str) -> tuple[list, list, list]:
    """(v1 before the restart, v2 after it, v2 uninterrupted) on the same data."""
    source, whole = tmp / "source", tmp / "whole"
    write(source, "a.csv", PART_A)
    before = collect(spark, bid_ddl(source) + v1, tmp / "checkpoint")
    write(source, "b.csv", PART_B, closer=True)
    after = collect(spark, bid_ddl(source) + v2, tmp / "checkpoint")
    write(whole, "a.csv", PART_A)
    write(whole, "b.csv", PART_B, closer=True)
    uninterrupted = collect(spark, bid_ddl(whole) + v2, tmp / "uninterrupted")
    return before, after, uninterrupted


@pytest.mark.parametrize("change", list(FULL_CHANGES))
def test_full_change_restarts_and_equals_an_uninterrupted_run(spark, tmp_path, change: str) -> None:
    v2 = FULL_CHANGES[change]
    before, after, uninterrupted = restart(spark, tmp_path, V1, v2)
    closed = {r[0] for r in before}
    assert closed == {"2020-04-15 08:00:00"}, "v1 must have emitted the first window before the restart"
    assert after == [r for r in uninterrupted if r[0] not in closed]
    assert len(after) == 4  # 08:10 (s1, s2), 08:20 (s1), 08:30 (s2)


def window_of(bidtime: str, size_min: int, slide_min: int | None = None) -> list[tuple[datetime, datetime]]:
    ts = datetime.fromisoformat(bidtime)
    slide = timedelta(minutes=slide_min or size_min)
    size = timedelta(minutes=size_min)
    start = datetime(ts.year, ts.month, ts.day, ts.hour) + (ts - datetime(ts.year, ts.month, ts.day, ts.hour)) // slide * slide
    windows = []
    while start + size > ts:
        windows.append((start, start + size))
        start -= slide
    return windows


def reference(rows, windows_of, aggregate) -> dict[tuple[str, str], str]:
    """Expected value of an aggregate per (window_start, supplier) over ``rows``."""
    groups: dict[tuple[str, str, str], list[Decimal]] = {}
    for bidtime, price, _item, supplier in rows:
        for start, end in windows_of(bidtime):
            groups.setdefault((str(start), str(end), supplier), []).append(Decimal(price))
    return {k: aggregate(v) for k, v in groups.items()}


@pytest.mark.parametrize("window, windows_of", [
    (TUMBLE, lambda t: window_of(t, 10)),
    (HOP, lambda t: window_of(t, 10, 5)),
])
def test_added_aggregate_starts_from_zero_at_the_restart(spark, tmp_path, window, windows_of) -> None:
    v1 = query("window_start, window_end, supplier_id, SUM(price) AS s", window=window)
    v2 = query("window_start, window_end, supplier_id, SUM(price) AS s, COUNT(*) AS n, MIN(price) AS lo, "
               "APPROX_COUNT_DISTINCT(item) AS items", window=window)
    before, after, uninterrupted = restart(spark, tmp_path, v1, v2)
    closed = {(r[0], r[2]) for r in before}
    open_rows = [r for r in uninterrupted if (r[0], r[2]) not in closed]
    # Retained: SUM continues from state and equals the uninterrupted run.
    assert [r[:4] for r in after] == [r[:4] for r in open_rows]
    # Added: COUNT(*), MIN(price) and a sketch of the (distinct) items see exactly the rows that
    # arrived after the restart.
    counts = reference(PART_B, windows_of, len)
    lows = reference(PART_B, windows_of, lambda v: f"{min(v):.2f}")
    for start, end, supplier, _s, n, lo, items in after:
        assert n == items == str(counts.get((start, end, supplier), 0)), (start, supplier)
        assert lo == lows.get((start, end, supplier), "NULL"), (start, supplier)
    # ...and somewhere that differs from the uninterrupted run: the window open across the restart.
    assert any(a != u for a, u in zip(after, open_rows))


@pytest.mark.parametrize("window, windows_of", [
    (TUMBLE, lambda t: window_of(t, 10)),
    (HOP, lambda t: window_of(t, 10, 5)),
])
def test_a_count_of_every_row_dropped_and_added_again_starts_from_zero(spark, tmp_path, window, windows_of) -> None:
    """v1's COUNT(*) is its state's row count (no second count a row). v2 drops it, and the row
    count goes on; v3 adds it again, and it counts only the rows after v3's restart, as PARTIAL
    promises, never the row count of the windows already open."""
    v1 = query("window_start, window_end, supplier_id, SUM(price) AS s, COUNT(*) AS n", window=window)
    v2 = query("window_start, window_end, supplier_id, SUM(price) AS s", window=window)
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    write(source, "a1.csv", PART_A[:3])
    collect(spark, bid_ddl(source) + v1, checkpoint)
    write(source, "a2.csv", PART_A[3:])
    collect(spark, bid_ddl(source) + v2, checkpoint)
    write(source, "b.csv", PART_B, closer=True)
    after = collect(spark, bid_ddl(source) + v1, checkpoint)
    counts = reference(PART_B, windows_of, len)
    totals = reference(PART_A + PART_B, windows_of, lambda v: f"{sum(v):.2f}")
    assert after and all(r[3:] == (totals[r[:3]], str(counts.get(r[:3], 0))) for r in after), after
    # s1 08:10 window: D (08:12) under v2, F (08:15) under v3: one row counted, not the window's two.
    assert ("2020-04-15 08:10:00", "2020-04-15 08:20:00", "s1", "12.00", "1") in after


def test_added_time_and_floating_point_aggregates_start_from_zero(spark, tmp_path) -> None:
    """A MAX of doubles and a MIN of times (kept as microseconds) added to a deployed job: the job
    has no room for them (it re-seeds, :mod:`spark_jobs.reseed`), and each starts from zero."""
    v1 = query("window_start, window_end, supplier_id, SUM(price) AS s")
    v2 = query("window_start, window_end, supplier_id, SUM(price) AS s, MAX(CAST(price AS DOUBLE)) AS top, "
               "MIN(bidtime) AS first_bid")
    before, after, uninterrupted = restart(spark, tmp_path, v1, v2)
    closed = {r[0] for r in before}
    assert [r[:4] for r in after] == [r[:4] for r in uninterrupted if r[0] not in closed]
    tops = reference(PART_B, lambda t: window_of(t, 10), lambda v: str(float(max(v))))
    firsts: dict[tuple[str, str, str], str] = {}
    for bidtime, _price, _item, supplier in PART_B:
        (start, end), = window_of(bidtime, 10)
        key = (str(start), str(end), supplier)
        firsts[key] = min(firsts.get(key, bidtime), bidtime)
    assert [(r[4], r[5]) for r in after] == [(tops[r[:3]], firsts[r[:3]]) for r in after]
    # s1 08:10 window: D (08:12, 5.00) before the restart, F (08:15, 7.00) after it.
    assert ("2020-04-15 08:10:00", "2020-04-15 08:20:00", "s1", "12.00", "7.0", "2020-04-15 08:15:00") in after


def test_modified_aggregate_discards_the_old_state(spark, tmp_path) -> None:
    v1 = query("window_start, window_end, supplier_id, SUM(price) AS s, MAX(price) AS m")
    v2 = query("window_start, window_end, supplier_id, SUM(price) AS s, MIN(price) AS m")
    before, after, uninterrupted = restart(spark, tmp_path, v1, v2)
    closed = {r[0] for r in before}
    open_rows = [r for r in uninterrupted if r[0] not in closed]
    assert [r[:4] for r in after] == [r[:4] for r in open_rows]
    lows = reference(PART_B, lambda t: window_of(t, 10), lambda v: f"{min(v):.2f}")
    assert [r[4] for r in after] == [lows.get((r[0], r[1], r[2]), "NULL") for r in after]
    # s1 08:10 window: D (5.00) before the restart, F (7.00) after: MIN restarted from zero -> 7.00.
    assert ("2020-04-15 08:10:00", "2020-04-15 08:20:00", "s1", "12.00", "7.00") in after


def test_cumulate_restart_keeps_retained_aggregates(spark, tmp_path) -> None:
    v1 = query("window_start, window_end, supplier_id, SUM(price) AS s", window=CUMULATE)
    v2 = query("window_start, window_end, supplier_id, SUM(price) AS s, COUNT(*) AS n", window=CUMULATE)
    before, after, uninterrupted = restart(spark, tmp_path, v1, v2)
    closed = {(r[0], r[1], r[2]) for r in before}
    open_rows = [r for r in uninterrupted if (r[0], r[1], r[2]) not in closed]
    assert [r[:4] for r in after] == [r[:4] for r in open_rows]
    assert before and after


def test_integer_sums_added_into_headroom_wrap_past_a_long_as_flink_s(spark, tmp_path) -> None:
    """A job that keeps headroom (``'stategate.state.slots'``) takes an added SUM and AVG of BIGINTs
    into its generic slots, which sum exactly; their results are still Flink's: the sum cut to a
    long's 64 bits as Java's arithmetic wraps it, and AVG that sum DIV the count."""
    headroom = "SET 'stategate.state.slots' = '3';\n"
    big = "CAST(price AS BIGINT) * 1000000000000000000"
    v1 = headroom + query("window_start, window_end, supplier_id, SUM(price) AS s", window=HOP)
    v2 = headroom + query(f"window_start, window_end, supplier_id, SUM(price) AS s, SUM({big}) AS b, AVG({big}) AS a",
                          window=HOP)
    _, after, _ = restart(spark, tmp_path, v1, v2)

    def wrapped(total: int) -> int:
        return (total + 2**63) % 2**64 - 2**63

    def flink(values: list[Decimal]) -> tuple[str, str]:
        total = wrapped(sum(int(v) * 10**18 for v in values))
        quotient = abs(total) // len(values) * (1 if total >= 0 else -1)  # Java's long division
        return str(total), str(quotient)

    expected = reference(PART_B, lambda t: window_of(t, 10, 5), flink)
    assert [r[4:] for r in after] == [expected.get(r[:3], ("NULL", "NULL")) for r in after]
    # s1's 08:15 window: F (7) and H (6) after the restart, 13 * 10^18 past a long's range.
    assert ("2020-04-15 08:15:00", "2020-04-15 08:25:00", "s1", "13.00", "-5446744073709551616",
            "-2723372036854775808") in after

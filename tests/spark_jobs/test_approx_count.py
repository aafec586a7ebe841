"""APPROX_COUNT_DISTINCT, VVR's: a HyperLogLog sketch of each window's values (Spark's
``hll_sketch_agg``), merged where windows are assembled from slices and where sessions merge,
and kept in the state across a restart. PyFlink has no APPROX_COUNT_DISTINCT to check against, so
these hold it to the exact count: equal while a window's values are few (the sketch keeps them
whole until then), within its accuracy past that."""

from __future__ import annotations

from datetime import datetime, timedelta

from benchmarks.flink_oracle import WINDOWS
from tests.spark_jobs.flink_fixtures import ddl, recorded
from tests.spark_jobs.helpers import collect_pipelines


def test_a_sketch_counts_exactly_while_the_values_are_few_on_every_window_kind(spark, tmp_path) -> None:
    """The ``distinct`` fixture's bids (600 over two hours, four suppliers, NULLs), on every window
    kind: of an INT, a DECIMAL with FILTER, a time, a DOUBLE and text, each equal to COUNT(DISTINCT)
    in every window; 0 where a FILTER never holds, as a count gives."""
    fixture = recorded("distinct")
    source = tmp_path / "bids"
    source.mkdir()
    (source / "0-bids.csv").write_text("\n".join(fixture["input"]) + "\n")
    arguments = (("qty", ""), ("price", " FILTER (WHERE qty > 40)"), ("bidtime", ""), ("score", ""),
                 ("CAST(qty AS STRING)", ""))
    calls = ", ".join(f"COUNT(DISTINCT {c}){f}, APPROX_COUNT_DISTINCT({c}){f}" for c, f in arguments)
    sql = ddl(fixture, source) + "".join(
        f"SELECT supplier_id, window_end, {calls}, APPROX_COUNT_DISTINCT(qty) FILTER (WHERE qty > 1000)\n"
        f"FROM TABLE({window}) GROUP BY supplier_id, window_start, window_end;\n" for window in WINDOWS.values())
    pipelines = [f"select#{i}" for i in range(1, len(WINDOWS) + 1)]
    rows, _ = collect_pipelines(spark, sql, tmp_path / "checkpoint", pipelines)
    for kind, pipeline in zip(WINDOWS, pipelines):
        found = [row for row in rows[pipeline] if row[0] != "closer"]
        assert found, kind
        for row in found:
            exact, approximate = row[2:-1:2], row[3:-1:2]
            assert approximate == exact and row[-1] == 0, (kind, row)


def test_past_that_it_counts_within_its_accuracy_across_a_restart(spark, tmp_path) -> None:
    """30,000 distinct quantities in one hour, half of them before a restart: a TUMBLE window, the
    HOP windows assembled from its slices (the slice log carries them across) and an open session
    count them within VVR's default accuracy (0.99: 3% here, 3.7 times the sketch's error) and
    within 30% at ``0.9``. Had the restart lost the first half, each would be near 15,000."""
    fixture = recorded("distinct")
    source = tmp_path / "bids"
    source.mkdir()
    start = datetime(2020, 4, 15, 8)
    halves = 2
    per_half = 15_000
    sql = ddl(fixture, source) + "".join(
        f"SELECT window_start, window_end, APPROX_COUNT_DISTINCT(qty), APPROX_COUNT_DISTINCT(qty, 0.9)\n"
        f"FROM TABLE({window}) GROUP BY window_start, window_end;\n" for window in (
            "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' HOUR)",
            "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '30' MINUTES, INTERVAL '1' HOUR)",
            "SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)"))
    pipelines = ["select#1", "select#2", "select#3"]
    times: dict[int, datetime] = {}
    found: dict[str, list] = {p: [] for p in pipelines}
    for half in range(halves):
        lines = []
        for n in range(half * per_half, (half + 1) * per_half):
            times[n] = start + timedelta(milliseconds=n * 3600_000 // (halves * per_half))
            lines.append(f"{times[n]:%Y-%m-%d %H:%M:%S.%f}"[:-3] + f",1.00,{n},,s{n % 4}")
        if half == halves - 1:
            lines.append(fixture["input"][-1])  # the closer: its watermark closes every window
        (source / f"{half}-bids.csv").write_text("\n".join(lines) + "\n")
        rows, _ = collect_pipelines(spark, sql, tmp_path / "checkpoint", pipelines)
        for pipeline in pipelines:
            found[pipeline] += rows[pipeline]
    windows = [(pipeline, row) for pipeline in pipelines for row in found[pipeline] if row[1] <= start + timedelta(hours=2)]
    assert len(windows) == 1 + 3 + 1, windows
    for pipeline, (window_start, window_end, default, coarse) in windows:
        exact = sum(1 for at in times.values() if window_start <= at < window_end)
        assert exact >= per_half
        assert abs(default - exact) <= 0.03 * exact and abs(coarse - exact) <= 0.3 * exact, \
            (pipeline, window_start, exact, default, coarse)

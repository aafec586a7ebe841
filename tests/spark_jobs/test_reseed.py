"""Re-seeding on real checkpoints: a job over files gets aggregates that do not fit its state layout;
the restart carries its open windows into a new layout instead of clearing the state: a cascade's
windows on RocksDB, each into its own stage, and open sessions. (The PARTIAL changes of
``test_restart.py`` re-seed too, on TUMBLE, HOP and CUMULATE windows, HDFS-backed state.)

The sink must hold what the PARTIAL verdict promises: kept aggregates equal to an uninterrupted run
of the new version, added ones counting exactly the rows that arrived after the restart, every
window once. The old query's checkpoint is kept, unchanged, in the checkpoint's record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from stategate.analyzer import Verdict
from stategate.spark_jobs.checkpoint import RECORD_DIR, RESEED_PENDING, RESEEDED
from stategate.spark_jobs.guard import CheckpointRefused
from stategate.spark_jobs.job import run
from tests.spark_jobs.crashes import CrashingJob
from tests.spark_jobs.helpers import csv_sink_rows
from tests.spark_jobs.test_take_over import KEYS, write_files

DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price BIGINT, item STRING, "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', "
       "'path' = '{path}', 'format' = 'csv'{options});\n"
       "CREATE TABLE S (item STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), {columns}) "
       "WITH ({sink});\n")
TUMBLE = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '20' MINUTES)"
WINDOW = f"FROM TABLE({TUMBLE}) GROUP BY item, window_start, window_end;"
V1 = "INSERT INTO S SELECT item, window_start, window_end, COUNT(*) AS n, SUM(price) AS total " + WINDOW
V2 = ("INSERT INTO S SELECT item, window_start, window_end, COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top, "
      "MIN(price) AS low " + WINDOW)
ROCKSDB = "SET 'state.backend.type' = 'rocksdb';\n"
#: A file a micro-batch, so a kill can fall between batches (the other tests read a run's files at once).
A_FILE_A_BATCH = ", 'spark.maxFilesPerTrigger' = '1'"


def script(source: Path, version: str, sink: str = "'connector' = 'print'", settings: str = "") -> str:
    """The job: its bids at ``source``, its sink's columns in ``version``'s order."""
    columns = "n BIGINT, total BIGINT" + (", top BIGINT, low BIGINT" if version == V2 else "")
    return settings + DDL.format(path=source, columns=columns, sink=sink, options=A_FILE_A_BATCH) + version


def collected(spark, sql: str, checkpoint: Path, **options) -> tuple[list[tuple], object]:
    rows: list = []
    result = run(spark, sql, checkpoint, writers={"S": lambda df, _: rows.extend(df.collect())}, **options)
    return sorted(tuple(str(v) for v in row) for row in rows), result


def minute(timestamp: str) -> int:
    """The minute of the day of a window bound as the rows print it."""
    return int(timestamp[11:13]) * 60 + int(timestamp[14:16])


def min_added_at_a_restart(spark, job: Callable[[Path, bool], str], tmp_path: Path,
                           **options) -> tuple[list[tuple], list[tuple], Any, list[tuple]]:
    """``job(source, False)`` over 00:00-00:30's bids, then ``job(source, True)``, which adds a MIN
    of the price as its sixth column, restarted on its checkpoint over 00:30-01:10: (the first's
    rows, the second's, its result, and what the second promises: an uninterrupted run's rows
    with the MIN over the bids since the restart, at price = their minute, none in a window ending
    by then)."""
    source, checkpoint = tmp_path / "bids", tmp_path / "checkpoint"
    write_files(source, 0, 3)
    before, _ = collected(spark, job(source, False), checkpoint)
    write_files(source, 3, 4)
    after, result = collected(spark, job(source, True), checkpoint, **options)
    whole = tmp_path / "whole"
    write_files(whole, 0, 7)
    uninterrupted, _ = collected(spark, job(whole, True), tmp_path / "ck-whole")
    promised = [(*r[:5], str(max(minute(r[1]), 30)) if minute(r[2]) > 30 else "None") for r in uninterrupted]
    return before, after, result, promised


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_re_seed_killed_at_any_step_finishes_into_the_same_rows(spark, tmp_path) -> None:
    """Killed after the old query moved and before its state is carried (the step a restart must
    redo from the archive), the re-seed is finished by the same command; another version is
    refused while it is under way."""

    def deploy(root: Path) -> str:
        sink = f"'connector' = 'filesystem', 'path' = '{root}/out/S', 'format' = 'csv'"
        root.mkdir()
        write_files(root / "bids", 0, 3)
        run(spark, script(root / "bids", V1, sink), root / "checkpoint")
        write_files(root / "bids", 3, 4)
        return script(root / "bids", V2, sink)

    clean = tmp_path / "clean"
    run(spark, deploy(clean), clean / "checkpoint")
    crashed = tmp_path / "crashed"
    job = CrashingJob(crashed, sql=deploy(crashed))
    assert job.script.exists()
    assert job.kill_at("reseed.moved:1") is not None
    with pytest.raises(CheckpointRefused, match="re-seed .* into another version"):
        run(spark, script(crashed / "bids", V1), crashed / "checkpoint")
    job.finish()
    clean_rows = csv_sink_rows(clean / "out" / "S")
    assert clean_rows and csv_sink_rows(crashed / "out" / "S") == clean_rows


def test_a_re_seed_whose_version_never_committed_is_undone_when_the_old_version_starts_again(spark, tmp_path) -> None:
    """A version that re-seeds and fails at its first micro-batch (as a rollback finds it): the old
    version started again goes on from its own state, as if the re-seed had not run."""
    source, checkpoint, whole = tmp_path / "bids", tmp_path / "checkpoint", tmp_path / "whole"
    write_files(source, 0, 3)
    v1 = script(source, V1)
    before, _ = collected(spark, v1, checkpoint)
    old_query = snapshot(checkpoint / "S")
    write_files(source, 3, 4)
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO|divide by zero"):
        collected(spark, script(source, V2).replace("MAX(price)", "MAX(CAST(price AS DECIMAL(20, 0)) / 0)"), checkpoint)
    assert (checkpoint / RECORD_DIR / "job.sql").read_text() != v1, "the failed version recorded itself"

    after, result = collected(spark, v1, checkpoint)
    assert result.report is not None and result.report.verdict is Verdict.FULL
    [archive] = (checkpoint / RECORD_DIR / RESEEDED).iterdir()
    assert (archive / "S.unused").is_dir() and not (archive / "S").exists()
    assert {k: v for k, v in snapshot(checkpoint / "S").items() if k in old_query} == old_query
    write_files(whole, 0, 7)
    uninterrupted, _ = collected(spark, script(whole, V1), tmp_path / "ck-whole")
    assert sorted(before + after) == uninterrupted and after


def test_open_sessions_are_carried_whole_and_merge_with_the_rows_that_reach_them(spark, tmp_path) -> None:
    """SESSION windows on RocksDB: Spark's session state keeps each open session with its start and
    end; each is carried as one row whose gap reaches its end, so the rows after the restart extend
    it as they would have extended the old one. A session that closed before is not emitted again.
    A DISTINCT aggregate's set of values is carried with it, as the SUM's sum is."""
    session = "SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)"

    def job(source: Path, version: str) -> str:
        # The COUNT as a COUNT(DISTINCT) of the prices, which are all different.
        return script(source, version, settings=ROCKSDB).replace(TUMBLE, session) \
            .replace("COUNT(*) AS n", "COUNT(DISTINCT price) AS n")

    def closed_early(source: Path) -> None:  # a key that bids once, and a late key that moves the watermark
        (source / "bids-000-solo.csv").write_text("2026-01-01 00:00:00,7,solo\n")
        os.utime(source / "bids-000-solo.csv", (1_699_999_999, 1_699_999_999))

    source, checkpoint = tmp_path / "bids", tmp_path / "checkpoint"
    write_files(source, 0, 3)  # k0..k2 bid every minute from 00:00 to 00:29: one session each, open
    closed_early(source)
    before, _ = collected(spark, job(source, V1), checkpoint)
    assert [r[:3] for r in before] == [("solo", "2026-01-01 00:00:00", "2026-01-01 00:05:00")]
    write_files(source, 3, 1)  # 00:30-00:39: each open session goes on
    (source / "bids-999-late.csv").write_text("2026-01-01 02:00:00,1,z\n")  # closes every session
    os.utime(source / "bids-999-late.csv", (1_700_000_999, 1_700_000_999))
    after, result = collected(spark, job(source, V2), checkpoint)
    assert result.report is not None and result.report.verdict is Verdict.PARTIAL
    assert "stategate.layout.reseed" in {f.rule for f in result.report.findings}

    # Each key bid every minute from 00:00 to 00:39 at price = the minute: one session, 00:00-00:44,
    # its COUNT and SUM going on from the state (40 bids, 0 + ... + 39 = 780), its MAX and MIN over
    # the rows since the restart only (00:30 on). The session closed before is not emitted again.
    assert after == [(k, "2026-01-01 00:00:00", "2026-01-01 00:44:00", "40", "780", "39", "30") for k in KEYS]


def test_a_cascade_carries_each_window_s_state_into_its_own_stage(spark, tmp_path) -> None:
    """Two windows in a cascade on RocksDB, each given an aggregate: the 5-minute windows open at
    the restart and the 20-minute HOP windows that hold the closed ones are both carried (the outer
    with the closed slices its slice log retains: 00:10-00:20 of the window 00:10-00:30). The outer
    SUM goes on as if uninterrupted; the added MAX of the inner MAXes sees only the rows since the
    restart. Then both are removed again: a FULL restart, though nothing downstream reads the
    inner's retired slot (Spark would drop it from the inner state, and refuse the restart for the
    state's schema)."""
    def job(source: Path, added: bool) -> str:
        inner, outer_aggregates = ("SUM(price) AS s, MAX(price) AS m", "SUM(s) AS total, MAX(m) AS top") if added \
            else ("SUM(price) AS s", "SUM(s) AS total")
        columns = "n BIGINT, total BIGINT" + (", top BIGINT" if added else "")
        return (ROCKSDB + DDL.format(path=source, columns=columns, sink="'connector' = 'print'", options="")
                + f"CREATE VIEW M AS SELECT item, window_time AS t, {inner} "
                  "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) "
                  "GROUP BY item, window_start, window_end, window_time;\n"
                  f"INSERT INTO S SELECT item, window_start, window_end, COUNT(*) AS n, {outer_aggregates} "
                  "FROM TABLE(HOP(TABLE M, DESCRIPTOR(t), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES)) "
                  "GROUP BY item, window_start, window_end;")

    source, checkpoint = tmp_path / "bids", tmp_path / "checkpoint"
    write_files(source, 0, 3)  # 00:00-00:30: the inner 00:25-00:30 and the outer 00:20-00:40 are open
    before, _ = collected(spark, job(source, False), checkpoint)
    emitted = {r[:3] for r in before}
    old_query = snapshot(checkpoint / "S")
    write_files(source, 3, 4)
    after, result = collected(spark, job(source, True), checkpoint)
    assert result.report is not None and result.report.verdict is Verdict.PARTIAL
    assert "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    [archived] = (checkpoint / RECORD_DIR / RESEEDED).iterdir()
    assert snapshot(archived / "S") == old_query, "the old query is archived whole and unchanged"
    assert not (checkpoint / RECORD_DIR / RESEED_PENDING).exists()

    whole = tmp_path / "whole"
    write_files(whole, 0, 9)
    uninterrupted, _ = collected(spark, job(whole, True), tmp_path / "ck-whole")
    last = max(r[2] for r in after)
    # Bids since the restart are from 00:30 on, at price = their minute: a window's MAX over them is
    # its last minute's, if it ends after 00:30; the rest as if uninterrupted.
    expected = [(*r[:5], str(minute(r[2]) - 1) if minute(r[2]) > 30 else "None") for r in uninterrupted
                if r[:3] not in emitted and r[2] <= last]
    assert after == expected and len(after) >= 6
    assert [r[3:] for r in after if r[1:3] == ("2026-01-01 00:20:00", "2026-01-01 00:40:00")] == \
        [("4", "590", "39")] * 3, "the outer window open at the restart: 4 inner windows, all its rows summed"

    write_files(source, 7, 2)
    again, result = collected(spark, job(source, False), checkpoint)
    assert result.report is not None and result.report.verdict is Verdict.FULL
    assert len(list((checkpoint / RECORD_DIR / RESEEDED).iterdir())) == 1, "a FULL restart re-seeds nothing"
    seen = {r[:3] for r in before + after}
    assert again and again == [r[:5] for r in uninterrupted if r[:3] not in seen]


@pytest.mark.parametrize("window", [TUMBLE, "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, "
                                            "INTERVAL '20' MINUTES)"], ids=["tumble", "hop"])
def test_an_aggregation_of_whole_windows_re_seeds_the_windows_it_reads(spark, tmp_path, window: str) -> None:
    """A query over whole windows of a per-item window aggregation (Nexmark q5's shape) keeps no
    state of its own. Adding MIN(price) to the windows it reads re-seeds them (the state the
    outer aggregation's Spark operator would be numbered by is theirs; a HOP window's closed
    slices come from its slice log) and restarts PARTIAL: every window open at the restart keeps
    its counts and sums as an uninterrupted run has them, and its MIN comes from the rows since the
    restart (00:30 on, at price = their minute; none in a window ending by then)."""
    def job(source: Path, added: bool) -> str:
        inner = "COUNT(*) AS n, SUM(price) AS s" + (", MIN(price) AS low" if added else "")
        outer = "MAX(n) AS n, SUM(s) AS total" + (", MIN(low) AS low" if added else "")
        columns = "n BIGINT, total BIGINT" + (", low BIGINT" if added else "")
        return (DDL.format(path=source, columns=columns, sink="'connector' = 'print'", options="")
                + f"CREATE VIEW PerItem AS SELECT item, window_start, window_end, {inner} FROM TABLE({window}) "
                  "GROUP BY item, window_start, window_end;\n"
                  f"INSERT INTO S SELECT MIN(item), window_start, window_end, {outer} FROM PerItem "
                  "GROUP BY window_start, window_end;")

    before, after, result, promised = min_added_at_a_restart(spark, job, tmp_path)
    assert result.report is not None and result.report.verdict is Verdict.PARTIAL
    assert "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    assert [p.name for p in (tmp_path / "checkpoint" / "S").glob("stategate-reseed*")] == ["stategate-reseed-1"]
    emitted = {r[1:3] for r in before}
    assert before and after == [r for r in promised if r[1:3] not in emitted]
    assert any(minute(r[1]) < 30 for r in after), "a window open at the restart"


def test_an_aggregate_kept_in_a_generic_headroom_slot_is_carried_at_a_re_seed(spark, tmp_path) -> None:
    """A job deployed with headroom (one generic slot, which keeps an exact value in 38 digits) takes
    an added MAX there; the next aggregate does not fit, so the restart re-seeds: MAX goes on from
    the generic slot's field into a slot of its own shape, the added MIN starts from zero."""
    def job(source: Path, aggregates: str) -> str:
        columns = "n BIGINT, total BIGINT, top BIGINT, low BIGINT"
        return ("SET 'stategate.state.slots' = '3';\n" + DDL.format(path=source, columns=columns, sink="'connector' = 'print'",
                                                                  options="")
                + f"INSERT INTO S SELECT item, window_start, window_end, COUNT(*) AS n, SUM(price) AS total, {aggregates} "
                + WINDOW)

    none = "CAST(NULL AS BIGINT)"
    source, checkpoint = tmp_path / "bids", tmp_path / "checkpoint"
    write_files(source, 0, 2)
    first, _ = collected(spark, job(source, f"{none} AS top, {none} AS low"), checkpoint)
    write_files(source, 2, 1)
    second, result = collected(spark, job(source, f"MAX(price) AS top, {none} AS low"), checkpoint)
    assert result.report is not None and result.report.verdict is Verdict.PARTIAL
    assert "stategate.layout.reseed" not in {f.rule for f in result.report.findings}, "MAX fits the generic slot"
    write_files(source, 3, 4)
    third, result = collected(spark, job(source, "MAX(price) AS top, MIN(price) AS low"), checkpoint)
    assert result.report is not None and "stategate.layout.reseed" in {f.rule for f in result.report.findings}

    whole = tmp_path / "whole"
    write_files(whole, 0, 7)
    uninterrupted, _ = collected(spark, job(whole, "MAX(price) AS top, MIN(price) AS low"), tmp_path / "ck-whole")
    seen = {r[:3] for r in first + second}
    # (item, start, end, n, total, top, low): the window 00:20-00:40 was open at both restarts; its
    # MAX counts every row since 00:20 (the second version's), its MIN those since 00:30.
    assert [r[:6] for r in third] == [r[:6] for r in uninterrupted if r[:3] not in seen and r[2] <= max(t[2] for t in third)]
    assert [r[3:] for r in third if r[1] == "2026-01-01 00:20:00"] == [("20", "590", "39", "30")] * 3


def test_a_window_join_carries_each_branch_s_windows_and_each_source_goes_on_where_it_stopped(spark, tmp_path) -> None:
    """Bids joined with asks on their HOP windows; a MAX added to the bids' branch (UNKNOWN: no seed
    rule covers a join's state; a human accepts the restart) re-seeds the pipeline: each branch's open slices and retained closed ones are carried into its own stage,
    and each source goes on from the files it had read (its own log: had either read a file again,
    or skipped one, its counts would differ). Kept columns as if uninterrupted, the MAX over the
    rows since the restart."""
    def job(root: Path, top: bool) -> str:
        hop = "HOP(TABLE {0}, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES)"
        return "".join(
            f"CREATE TABLE {name} (bidtime TIMESTAMP(3), price BIGINT, item STRING, WATERMARK FOR bidtime AS "
            f"bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '{root / name}', "
            "'format' = 'csv');\n" for name in ("Bid", "Ask")) + (
            "CREATE TABLE S (item STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, "
            f"total BIGINT, asks BIGINT{', top BIGINT' if top else ''}) WITH ('connector' = 'print');\n"
            f"INSERT INTO S SELECT B.item, B.window_start, B.window_end, B.n, B.total, A.asks{', B.top' if top else ''} "
            f"FROM (SELECT item, window_start, window_end, COUNT(*) AS n, SUM(price) AS total"
            f"{', MAX(price) AS top' if top else ''} FROM TABLE({hop.format('Bid')}) "
            "GROUP BY item, window_start, window_end) B "
            f"JOIN (SELECT item, window_start, window_end, COUNT(*) AS asks FROM TABLE({hop.format('Ask')}) "
            "GROUP BY item, window_start, window_end) A "
            "ON B.item = A.item AND B.window_start = A.window_start AND B.window_end = A.window_end;")

    def write_asks(source: Path, first: int, count: int) -> None:  # twice a minute, unlike the bids
        source.mkdir(parents=True, exist_ok=True)
        for index in range(first, first + count):
            path = source / f"asks-{index:03d}.csv"
            path.write_text("".join(f"2026-01-01 {(index * 10 + m) // 60:02d}:{(index * 10 + m) % 60:02d}:{s:02d},1,{key}\n"
                                    for m in range(10) for s in (0, 30) for key in KEYS))
            os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))

    def feed(root: Path, first: int, count: int, asks: int) -> None:  # asks: files behind the bids
        root.mkdir(exist_ok=True)
        write_files(root / "Bid", first, count)
        write_asks(root / "Ask", first, count - asks)

    root, checkpoint = tmp_path / "live", tmp_path / "checkpoint"
    feed(root, 0, 3, asks=1)  # the asks' source stops a file behind: 00:00-00:19
    before, _ = collected(spark, job(root, False), checkpoint)
    emitted = {r[:3] for r in before}
    write_asks(root / "Ask", 2, 5)
    write_files(root / "Bid", 3, 4)
    after, result = collected(spark, job(root, True), checkpoint, accept=Verdict.UNKNOWN)
    assert result.report is not None and result.report.verdict is Verdict.UNKNOWN
    assert "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    assert {p.name for p in (checkpoint / "S").glob("stategate-reseed*")} == {"stategate-reseed", "stategate-reseed-1"}

    whole = tmp_path / "whole"
    feed(whole, 0, 7, asks=0)
    uninterrupted, _ = collected(spark, job(whole, True), tmp_path / "ck-whole")
    last = max(r[2] for r in after)
    expected = [(*r[:6], str(minute(r[2]) - 1) if minute(r[2]) > 30 else "None") for r in uninterrupted
                if r[:3] not in emitted and r[2] <= last]
    assert after == expected and len(after) >= 9


def test_a_window_join_with_an_aggregation_of_whole_windows_as_a_side_carries_the_windows_each_side_reads(
        spark, tmp_path) -> None:
    """Nexmark q5's join: each item's HOP windows joined with the whole windows' maximum count. The
    join's second side keeps no state of its own, so the windows it reads are Spark's second
    stateful operator, though the third stage; a MIN added to the items' windows re-seeds both
    sides' windows, each with its open and retained slices. Every window is an uninterrupted run's,
    the MIN over the rows since the restart."""
    def job(source: Path, added: bool) -> str:
        low = ", MIN(price) AS low" if added else ""
        hop = "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES)"
        per_item = f"SELECT item, window_start, window_end, COUNT(*) AS n, SUM(price) AS s{low} FROM TABLE({hop}) " \
                   "GROUP BY item, window_start, window_end"
        return (DDL.format(path=source, columns="n BIGINT, total BIGINT" + (", low BIGINT" if added else ""),
                           sink="'connector' = 'print'", options="")
                + f"INSERT INTO S SELECT B.item, B.window_start, B.window_end, B.n, M.total{', B.low' if added else ''} "
                  f"FROM ({per_item}) B JOIN (SELECT window_start, window_end, MAX(n) AS top, SUM(s) AS total "
                  f"FROM ({per_item}) GROUP BY window_start, window_end) M "
                  "ON B.window_start = M.window_start AND B.window_end = M.window_end AND B.n = M.top;")

    before, after, result, promised = min_added_at_a_restart(spark, job, tmp_path, accept=Verdict.UNKNOWN)
    assert result.report is not None and "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    assert {p.name for p in (tmp_path / "checkpoint" / "S").glob("stategate-reseed*")} == \
        {"stategate-reseed", "stategate-reseed-2"}
    emitted = {r[:3] for r in before}
    assert before and after == [r for r in promised if r[:3] not in emitted]
    assert any(minute(r[1]) < 30 for r in after), "a window open at the restart"

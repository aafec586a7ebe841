"""A clear-state redeploy that takes over from the archived checkpoint: real Spark, real files.

v1 runs over eight files (one per ten minutes of event time, read one per micro-batch), its
checkpoint is archived, four more files arrive, and v2 (an INCOMPATIBLE change with the same window
shape: the group key is computed differently) takes over. The sink's union across the redeploy must
hold each window once, v2's rows must be those of an uninterrupted v2 run for every window after the
seam, and v2 must read only the files its open windows need plus the new ones.
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from stategate.analyzer import compare
from stategate.analyzer.build import build
from stategate.spark_jobs.job import run
from stategate.spark_jobs.storage import HadoopStorage
from stategate.spark_jobs.takeover import source_filter
from stategate.spark_jobs.cutover import Cutover, TakeOverRefused, cutovers
from tests.spark_jobs.crashes import CrashingJob
from tests.spark_jobs.helpers import csv_sink_rows

KEYS = ("k0", "k1", "k2")
FILES, NEW_FILES = 8, 4
DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price BIGINT, item STRING, "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', "
       "'path' = '{path}', 'format' = 'csv', 'spark.maxFilesPerTrigger' = '1');\n"
       "CREATE TABLE S (item STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total BIGINT) "
       "WITH ('connector' = 'print');\n")
V1 = ("INSERT INTO S SELECT item, window_start, window_end, SUM(price) AS total FROM TABLE(TUMBLE(TABLE Bid, "
      "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end;")
V15 = V1.replace("INTERVAL '10' MINUTES", "INTERVAL '15' MINUTES")
V2 = V1.replace("SELECT item,", "SELECT UPPER(item) AS item,").replace("GROUP BY item,", "GROUP BY UPPER(item),")


def write_files(source: Path, first: int, count: int) -> None:
    """Files of ten minutes each: every key bids once a minute, price = the minute."""
    source.mkdir(exist_ok=True)
    for index in range(first, first + count):
        rows = [f"2026-01-01 {(index * 10 + m) // 60:02d}:{(index * 10 + m) % 60:02d}:00,{index * 10 + m},{key}"
                for m in range(10) for key in KEYS]
        path = source / f"bids-{index:03d}.csv"
        path.write_text("\n".join(rows) + "\n")
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))  # Spark reads files oldest first


def run_collect(spark, sql: str, checkpoint: Path, **options) -> tuple[list[tuple], object]:
    rows: list = []
    result = run(spark, sql, checkpoint, writers={"S": lambda df, _: rows.extend(df.collect())}, **options)
    return sorted((r["item"], str(r["window_start"]), r["total"]) for r in rows), result


def batches(result) -> int:
    return sum(len(q.recentProgress) for q in result.queries)


def input_rows(result) -> int:
    return sum(p["numInputRows"] for q in result.queries for p in q.recentProgress)


@pytest.fixture(scope="module")
def redeploy(spark, tmp_path_factory):
    """v1 over FILES files, archived; then NEW_FILES more arrive. Returns the paths and v1's rows
    (once per module: a test that changes them works on a copy)."""
    tmp_path = tmp_path_factory.mktemp("redeploy")
    source, archive = tmp_path / "bids", tmp_path / "archive" / "checkpoint"
    sql = DDL.format(path=source)
    # Two runs of v1, the second a restart after half the files: the file source's log then
    # numbers its entries apart from the micro-batches (a no-data batch ended the first run).
    write_files(source, 0, FILES // 2)
    old_rows, _ = run_collect(spark, sql + V1, tmp_path / "checkpoint", fresh=True)
    write_files(source, FILES // 2, FILES - FILES // 2)
    old_rows += run_collect(spark, sql + V1, tmp_path / "checkpoint")[0]
    archive.parent.mkdir()
    os.rename(tmp_path / "checkpoint", archive)  # what the gate's clear-state does, on a local root
    write_files(source, FILES, NEW_FILES)
    return sql, source, archive, old_rows


def test_the_new_version_emits_each_window_once_and_as_an_uninterrupted_run_would(spark, tmp_path, redeploy):
    sql, source, archive, old_rows = redeploy
    new_rows, result = run_collect(spark, sql + V2, tmp_path / "v2", fresh=True, take_over=str(archive))
    reference, full = run_collect(spark, sql + V2, tmp_path / "reference", fresh=True)

    (cutover,) = result.cutovers.values()
    seam = max(start for _, start, _ in old_rows)  # the last window v1 emitted starts here
    assert all(start > seam for _, start, _ in new_rows), "no window emitted by both versions"
    assert new_rows == [row for row in reference if row[1] > seam], "after the seam, as an uninterrupted v2"
    union = [(item.lower(), start) for item, start, _ in old_rows + new_rows]
    assert len(union) == len(set(union)), "one row per key and window across the redeploy"
    assert {(item.lower(), start) for item, start, _ in reference} == set(union), "no window lost at the seam"

    # Read: only the files the open windows need, then the new ones. v1's last committed batch is
    # Spark's no-data batch after file 7 (micro-batch 9: the first run's ended after file 3), run
    # with file 7's watermark: W = 01:19:00 - 1 s. TUMBLE
    # 10 min + 1 s delay reaches back to 01:08:58; file 6's rows can be as late as its watermark +
    # delay, 01:09:00: files 6 and 7 are read again, files 0 to 5 never opened.
    assert (cutover.replayed, cutover.read) == (2, FILES)
    rows_per_file = 10 * len(KEYS)
    assert input_rows(result) == rows_per_file * (2 + NEW_FILES)
    assert input_rows(full) == rows_per_file * (FILES + NEW_FILES)
    # A skipped file costs no micro-batch either (one file per batch, as v1 read them).
    assert batches(result) == batches(full) - (FILES - 2)


def test_a_changed_window_shape_emits_every_window_ending_after_the_seam_complete(spark, tmp_path, redeploy):
    """10-minute windows become 15-minute ones: the new version emits each window ending after the
    cutover watermark W, complete. The one open across W counts rows from before W, which the old
    version counted in its own windows: the overlap the report's seam names."""
    sql, _, archive, _ = redeploy
    (replay,) = compare(sql + V1, sql + V15).replay
    assert "the window shape changed, so new windows that start before W also count rows" in replay.seam
    new_rows, result = run_collect(spark, sql + V15, tmp_path / "v15", fresh=True, take_over=str(archive))
    (cutover,) = result.cutovers.values()

    # The oracle, from how write_files made the input: each key bids once a minute, price = the minute.
    # A window is emitted when the watermark (the latest bid - 1 s) passes its end.
    epoch = calendar.timegm((2026, 1, 1, 0, 0, 0)) * 1000
    minutes = (FILES + NEW_FILES) * 10
    final_watermark = epoch + (minutes - 1) * 60_000 - 1000
    expected = sorted(
        (key, str(datetime.fromtimestamp((epoch + start * 60_000) / 1000)), sum(range(start, start + 15)))
        for start in range(0, minutes, 15) for key in KEYS
        if cutover.watermark_ms < epoch + (start + 15) * 60_000 <= final_watermark)
    assert new_rows == expected
    seam = datetime.fromtimestamp(cutover.watermark_ms / 1000)
    assert any(datetime.fromisoformat(start) < seam for _, start, _ in new_rows), "a window open across W"


def test_replay_none_skips_everything_the_old_version_read(spark, tmp_path, redeploy):
    sql, _, archive, old_rows = redeploy
    new_rows, result = run_collect(spark, sql + V2, tmp_path / "v2", fresh=True, take_over=str(archive),
                                   replay="none")
    assert input_rows(result) == 10 * len(KEYS) * NEW_FILES
    seam = max(start for _, start, _ in old_rows)
    assert new_rows and all(start > seam for _, start, _ in new_rows)


def test_a_take_over_that_cannot_be_honoured_is_refused_and_changes_nothing(spark, tmp_path, redeploy):
    sql, source, shared_archive, _ = redeploy
    archive = tmp_path / "archive"
    shutil.copytree(shared_archive, archive)
    before = sorted(p.name for p in archive.rglob("*"))
    needed, aside = source / "bids-007.csv", tmp_path / "bids-007.csv"
    os.rename(needed, aside)  # a file the replay needs: gone (a retention shorter than the span)
    try:
        with pytest.raises(TakeOverRefused, match="bids-007.csv.*is gone"):
            run(spark, sql + V2, tmp_path / "v2", fresh=True, take_over=str(archive))
    finally:
        os.rename(aside, needed)
    (archive / "_stategate" / "job.sql").unlink()
    with pytest.raises(TakeOverRefused, match="the SQL that built the checkpoint is unknown"):
        run(spark, sql + V2, tmp_path / "v2", fresh=True, take_over=str(archive))
    assert sorted(p.name for p in archive.rglob("*")) == [n for n in before if n != "job.sql"]
    assert not (tmp_path / "v2").exists(), "a refused take-over leaves no checkpoint behind"
    with pytest.raises(ValueError, match="needs --fresh"):
        run(spark, sql + V2, tmp_path / "v3", take_over=str(archive))


def test_only_the_same_sink_and_source_are_taken_over(spark, tmp_path, redeploy):
    """A sink written elsewhere holds none of the old version's rows: no cutover (a full replay fills
    it). A source read elsewhere was never read by the old version: it starts from its startup mode,
    and only the seam is taken over."""
    sql, source, archive, _ = redeploy
    storage = HadoopStorage(spark)
    moved_sink = build(sql.replace("'connector' = 'print'", f"'connector' = 'filesystem', 'path' = '{tmp_path}'")
                       + V2)
    assert cutovers(storage, str(archive), moved_sink) == {}
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(source, elsewhere)
    (cut,) = cutovers(storage, str(archive), build(sql.replace(str(source), str(elsewhere)) + V2)).values()
    (same,) = cutovers(storage, str(archive), build(sql + V2)).values()
    assert cut.new_source and not same.new_source
    assert (cut.watermark_ms, cut.cutoff_ms) == (same.watermark_ms, same.cutoff_ms), "the same seam"
    assert source_filter(cut) is None and source_filter(same) is not None, "every file of the new source is read"


def test_a_take_over_killed_mid_write_is_retried_into_the_same_rows(spark, tmp_path, redeploy):
    """Killed with its first batch's file in place but not committed, the take-over is retried with
    the same command (as Airflow retries the task): it resumes its own checkpoint with the cutover
    it recorded, and its sink ends with exactly the rows of an uninterrupted take-over."""
    sql, _, archive, _ = redeploy

    def script(root: Path) -> str:
        return (sql + V2).replace("WITH ('connector' = 'print')",
                                  f"WITH ('connector' = 'filesystem', 'path' = '{root}/out/S', 'format' = 'csv')")

    clean = tmp_path / "clean"
    run(spark, script(clean), clean / "checkpoint", fresh=True, take_over=str(archive))
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    job = CrashingJob(crashed, sql=script(crashed), arguments=("--fresh", "--take-over", str(archive)))
    assert job.kill_at("sink.placed:1") is not None, "killed between placing a file and the commit"
    job.finish()
    clean_rows = csv_sink_rows(clean / "out" / "S")
    assert clean_rows and csv_sink_rows(crashed / "out" / "S") == clean_rows


def test_check_deployed_says_what_the_take_over_will_read(spark, tmp_path, redeploy):
    """Before the deploy, ``stategate check --deployed`` reads the deployed checkpoint as the
    take-over will read it once archived: the files and bytes a bounded take-over re-reads, beside
    a full replay's; and, where a bounded take-over would be refused, why."""
    sql, source, archive, _ = redeploy
    job = tmp_path / "root" / "bids"
    shutil.copytree(archive, job / "checkpoint")
    (job / "deployment.json").write_text(json.dumps({"sql": sql + V1}))
    new = tmp_path / "v2.sql"
    new.write_text(sql + V2)

    def check(form: str) -> str:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "stategate"), "check", str(new), "--deployed",
             f"file://{tmp_path / 'root'}", "--job", "bids", "--format", form],
            capture_output=True, text=True, timeout=120, env={**os.environ, "AIRFLOW_HOME": str(tmp_path / "af")})
        assert done.returncode == 0, done.stderr
        return done.stdout

    (replay,) = json.loads(check("json"))["replay"]
    (cut,) = cutovers(HadoopStorage(spark), str(archive), build(sql + V2)).values()
    size = {path.name: path.stat().st_size for path in source.glob("*.csv")}
    old = [f"bids-{index:03d}.csv" for index in range(FILES)]
    assert replay["volume"] == {"files": cut.replayed, "bytes": size["bids-006.csv"] + size["bids-007.csv"],
                                "full_files": cut.read, "full_bytes": sum(size[name] for name in old)}
    assert (cut.replayed, cut.read) == (2, FILES)
    assert f"re-reads 2 of the {FILES} files the deployed version read" in check("markdown")

    needed, aside = source / "bids-007.csv", tmp_path / "bids-007.csv"
    os.rename(needed, aside)
    try:
        (replay,) = json.loads(check("json"))["replay"]
    finally:
        os.rename(aside, needed)
    assert "bids-007.csv, which the replay must read again, is gone" in replay["volume"]["refused"]


JOIN_DDL = "".join(DDL.split(";\n")[0].replace("Bid (", f"{name} (").replace("{path}", f"{{{name}}}") + ";\n"
                   for name in ("BidA", "BidB")) + (
    "CREATE TABLE J (item STRING, window_start TIMESTAMP(3), a BIGINT, b BIGINT) WITH ('connector' = 'print');\n")
JOIN_V1 = ("INSERT INTO J SELECT A.item, A.ws, A.total, B.total FROM "
           "(SELECT item, window_start AS ws, window_end AS we, SUM(price) AS total FROM TABLE(TUMBLE(TABLE BidA, "
           "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end) A JOIN "
           "(SELECT item, window_start AS ws, window_end AS we, SUM(price) AS total FROM TABLE(TUMBLE(TABLE BidB, "
           "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end) B "
           "ON A.item = B.item AND A.ws = B.ws AND A.we = B.we;")
JOIN_V2 = JOIN_V1.replace("SELECT item,", "SELECT UPPER(item) AS item,").replace("GROUP BY item,", "GROUP BY UPPER(item),")


def test_a_window_join_takes_over_with_the_seam_kept(spark, tmp_path):
    """A join's sources are read from their startup modes (Spark's one watermark bounds neither
    source's files), but the seam holds: each window once across the redeploy, and the new
    version's windows complete, as the input says they are."""
    for name in ("a", "b"):
        write_files(tmp_path / name, 0, 4)
    sql = JOIN_DDL.format(BidA=tmp_path / "a", BidB=tmp_path / "b")

    def joined(script: str, checkpoint: Path, **options) -> tuple[list[tuple], object]:
        rows: list = []
        result = run(spark, sql + script, checkpoint, writers={"J": lambda df, _: rows.extend(df.collect())},
                     **options)
        return sorted((r["item"].lower(), str(r["window_start"]), r["a"], r["b"]) for r in rows), result

    old_rows, _ = joined(JOIN_V1, tmp_path / "checkpoint", fresh=True)
    (tmp_path / "archive").mkdir()
    os.rename(tmp_path / "checkpoint", tmp_path / "archive" / "checkpoint")
    for name in ("a", "b"):
        write_files(tmp_path / name, 4, 2)
    new_rows, result = joined(JOIN_V2, tmp_path / "v2", fresh=True, take_over=str(tmp_path / "archive" / "checkpoint"))

    (cutover,) = result.cutovers.values()
    assert cutover.joined and "a window join" in cutover.describe()
    union = [(item, start) for item, start, _, _ in old_rows + new_rows]
    assert len(union) == len(set(union)), "one row per key and window across the redeploy"
    epoch = calendar.timegm((2026, 1, 1, 0, 0, 0)) * 1000
    final_watermark = epoch + (6 * 10 - 1) * 60_000 - 1000
    expected = sorted(
        (key, str(datetime.fromtimestamp((epoch + start * 60_000) / 1000)), total, total)
        for start in range(0, 60, 10) for key in KEYS
        for total in (sum(range(start, start + 10)),)
        if cutover.watermark_ms < epoch + (start + 10) * 60_000 <= final_watermark)
    assert new_rows == expected and len(old_rows) == 3 * len(KEYS)


def test_a_take_over_recorded_before_sources_had_files_of_their_own_goes_on_the_same() -> None:
    """A checkpoint's take-over record from before a window join's sources each kept their files
    (``skipped``: one source's) is applied as it was: its files are the first source's."""
    recorded = {"watermark_ms": 5, "cutoff_ms": 2, "replayed_files": 1, "archived_files": 2,
                "skipped": [["file:///bids/0.csv", 1700000000000]], "new_source": False, "joined": False,
                "kafka": False, "source_options": {}}
    cutover = Cutover.from_dict("S", recorded)
    assert cutover.skipped_by(0) == (("file:///bids/0.csv", 1700000000000),) and cutover.skipped_by(1) == ()
    assert Cutover.from_dict("S", cutover.to_dict()) == cutover

"""Arrival order across micro-batches, a restart and every file format: FIRST_VALUE, LAST_VALUE and
LISTAGG keep each value with where it arrived from (the file's modification time, its path, the
row's line), so neither how the rows were cut into micro-batches nor a restart between them
changes a value. The bids of ``tests/data/flink/ordered.json`` (43 of them arrive after a later
bid of their supplier) come in four files, one a micro-batch, the job stopped after the second: the
rows equal Flink's, which read them in one go. HOP and CUMULATE windows, whose slices also pass
through the slice log (``test_flink_equality`` runs every kind in one go). FIRST_VALUE and
LAST_VALUE of numbers and times keep the arrival as one number beside the value in its own type:
reordered, dropped, and carried from a checkpoint an earlier release wrote with every value as text;
lists keep each arrival as two longs, and go on from, or re-seed, the nested arrivals an earlier
release kept."""

from __future__ import annotations

import json
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from benchmarks.flink_oracle import WINDOWS
from stategate.analyzer import Verdict
from stategate.analyzer.layout import ORDERED_ARRIVALS
from tests.spark_jobs.flink_fixtures import assert_equals_flink, ddl, queries, recorded
from tests.spark_jobs.helpers import (CLOSER, bid_ddl, collect, collect_pipelines, collect_run, recorded_checkpoint,
                                      write_recorded)
from tests.spark_jobs.test_restart import PART_A, PART_B, query, write as write_bids

FILES = 4
FIELDS = ("bidtime", "price", "qty", "score", "supplier_id")


def as_json(line: str) -> str:
    values = dict(zip(FIELDS, line.split(",")))
    return json.dumps({k: (v if k in ("bidtime", "supplier_id") else json.loads(v)) for k, v in values.items() if v})


def write(spark, source: Path, name: str, lines: list[str], fmt: str, modified: int, line_end: str = "\n") -> None:
    """``lines`` (the fixture's CSV) as one file of ``fmt``, each ended by ``line_end``, modified at
    ``modified``; a Parquet file is written by Spark from the CSV in one task, so its rows keep their order."""
    path = source / f"{name}.{fmt}"
    staging = source.parent / f"staging-{name}"
    staging.mkdir()
    if fmt == "json":
        (staging / "f").write_text("".join(as_json(line) + line_end for line in lines), newline="")
    else:
        (staging / "f").write_text("".join(line + line_end for line in lines), newline="")
    if fmt == "parquet":
        columns = recorded("ordered")["columns"].replace("TIMESTAMP(3)", "TIMESTAMP")  # as Spark spells it
        spark.read.schema(columns).csv(str(staging / "f")).coalesce(1).write.parquet(str(staging / "p"))
        next((staging / "p").glob("part-*.parquet")).rename(staging / "f")
    shutil.move(staging / "f", path)
    shutil.rmtree(staging)
    os.utime(path, (modified, modified))


@pytest.mark.parametrize("fmt, line_end", [("csv", "\n"), ("csv", "\r\n"), ("json", "\n"), ("parquet", "\n")])
def test_arrival_order_survives_micro_batches_a_restart_and_every_format(spark, tmp_path, fmt: str,
                                                                         line_end: str) -> None:
    """Lines end with a line feed, or a carriage return and a line feed (Windows' text files)."""
    fixture = recorded("ordered")
    *bids, closer = fixture["input"]
    source = tmp_path / "bids"
    source.mkdir()
    size = -(-len(bids) // FILES)
    files = [bids[i:i + size] for i in range(0, len(bids), size)] + [[closer]]
    script, kinds, pipelines = queries(fixture, ("hop", "cumulate"))
    sql = ddl(fixture, source, fmt, ", 'spark.maxFilesPerTrigger' = '1'") + script
    rows: dict[str, list] = {p: [] for p in pipelines}
    for run_files in (range(2), range(2, len(files))):
        for index in run_files:
            write(spark, source, f"{index}-bids", files[index], fmt, 1_600_000_000 + index, line_end)
        found, result = collect_pipelines(spark, sql, tmp_path / "checkpoint", pipelines)
        assert len(result.queries[0].recentProgress) > 1, "a file a micro-batch"
        for pipeline in pipelines:
            rows[pipeline] += found[pipeline]
    assert_equals_flink(fixture, rows, kinds, pipelines)


#: A supplier's bids in the order they arrive (event times out of order): quantities 2, 3, NULL, 3, 5, 2.
DISTINCT_BIDS = ["2020-04-15 08:00:05.000,1.00,2,,s1", "2020-04-15 08:00:01.000,1.00,3,,s1",
                 "2020-04-15 08:00:04.000,1.00,,,s1", "2020-04-15 08:00:03.000,1.00,3,,s1",
                 "2020-04-15 08:00:02.000,1.00,5,,s1", "2020-04-15 08:00:06.000,1.00,2,,s1"]


def test_a_distinct_list_takes_each_value_where_it_first_arrived(spark, tmp_path) -> None:
    """LISTAGG(DISTINCT), ARRAY_AGG(DISTINCT), FIRST_VALUE(DISTINCT) and LAST_VALUE(DISTINCT):
    each value once, in the order of its first arrival (a NULL is a value of ARRAY_AGG's), on every
    window kind; LAST_VALUE's is the value that first arrived last (5, where the last row is 2). Flink 2.3
    gives the same values, over TUMBLE, HOP and CUMULATE windows in the order of its hash table
    (``tests/data/flink/distinct.json`` holds it to them); this holds the order stategate defines."""
    fixture = recorded("distinct")
    source = tmp_path / "bids"
    source.mkdir()
    (source / "0-bids.csv").write_text("\n".join([*DISTINCT_BIDS, fixture["input"][-1]]) + "\n")
    sql = ddl(fixture, source) + "".join(
        "SELECT supplier_id, window_end, LISTAGG(DISTINCT CAST(qty AS STRING)) AS listed, "
        "ARRAY_AGG(DISTINCT qty) AS arrayed, ARRAY_AGG(DISTINCT qty IGNORE NULLS) AS present, "
        "FIRST_VALUE(DISTINCT qty) AS first, LAST_VALUE(DISTINCT qty) AS last\n"
        f"FROM TABLE({window}) GROUP BY supplier_id, window_start, window_end;\n" for window in WINDOWS.values())
    pipelines = [f"select#{i}" for i in range(1, len(WINDOWS) + 1)]
    rows, _ = collect_pipelines(spark, sql, tmp_path / "checkpoint", pipelines)
    for kind, pipeline in zip(WINDOWS, pipelines):
        found = [list(row[2:]) for row in rows[pipeline] if row[0] == "s1"]
        assert found and all(values == ["2,3,5", [2, 3, None, 5], [2, 3, 5], 2, 5] for values in found), (kind, found)


#: A checkpoint the release before FIRST_VALUE and LAST_VALUE kept numbers and times in their own
#: type wrote (commit f9c1540): every value kept as text with its arrival (slots ``FIRST_VALUE``,
#: ``LAST_VALUE``), over ``ARRIVED_BEFORE``, both windows still open.
KEPT_AS_TEXT = "arrival-as-text"
#: A checkpoint the release before lists kept their arrivals as two longs wrote (commit 3428dd5):
#: LISTAGG, ARRAY_AGG and LAST_VALUE(DISTINCT) each keep every value with its arrival as a struct
#: (``al`` fields), over ``ARRIVED_BEFORE``, both windows still open.
NESTED_ARRIVALS = "lists-nested"
ARRIVED_BEFORE = ["2020-04-15 08:05:00,4.00,C,supplier1", "2020-04-15 08:06:00,2.00,A,supplier2",
                  "2020-04-15 08:07:00,5.00,D,supplier1"]
#: Bids into both of those windows after them, and one that opens another.
ARRIVED_AFTER = ["2020-04-15 08:08:00,3.00,B,supplier1", "2020-04-15 08:09:00,1.00,E,supplier2",
                 "2020-04-15 08:17:00,6.00,F,supplier2"]


def recorded_before(name: str, tmp_path: Path) -> tuple[Path, str]:
    """The recorded checkpoint ``name`` where the test runs, and the bids after it in its source:
    the first file's, which it read, modified when it was recorded; the second's now."""
    checkpoint, sql = recorded_checkpoint(name, tmp_path)
    source = tmp_path / "bids"
    source.mkdir()
    write_recorded(checkpoint, source / "1.csv", "".join(line + "\n" for line in ARRIVED_BEFORE))
    (source / "2.csv").write_text("".join(line + "\n" for line in ARRIVED_AFTER) + CLOSER)
    return checkpoint, sql


def reseeded_by_an_added_min(spark, name: str, tmp_path: Path, last: str) -> tuple[list[tuple], dict]:
    """The recorded checkpoint ``name`` restarted with ``MIN(price)`` added after its ``last``
    aggregate, which re-seeds it: the rows, and the recorded slots of its stage after."""
    checkpoint, sql = recorded_before(name, tmp_path)
    added = sql.replace("last_item STRING)", "last_item STRING, low DECIMAL(10, 2))") \
        .replace(f"{last}\n", f"{last}, MIN(price)\n")
    assert added.count("MIN(price)") == 1 and added.count("low DECIMAL") == 1
    rows, result = collect_run(spark, added, checkpoint, pipeline="Out")
    assert result.report is not None and "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    signature = json.loads((checkpoint / "_stategate" / "signature.json").read_text())
    return rows, signature["pipelines"]["Out"]["stages"][0]["slots"]


def test_first_and_last_value_kept_as_text_by_an_earlier_release_go_on_and_re_seed_into_their_own_type(
        spark, tmp_path) -> None:
    """Upgrading stategate keeps a deployed FIRST_VALUE's state: the recorded slots go on as text,
    the windows equal an uninterrupted run's (the first value arrived before the restart, the last
    after it). An added aggregate re-seeds them into slots that keep numbers and times in their own
    type: the arrivals carried as one number still order before every later row's, so the windows
    are the same, and the added MIN counts the rows after the restart."""
    checkpoint, sql = recorded_before(KEPT_AS_TEXT, tmp_path)
    continued = collect(spark, sql, checkpoint, pipeline="Out")
    uninterrupted = collect(spark, sql, tmp_path / "uninterrupted", pipeline="Out")
    assert continued == uninterrupted == [
        ("supplier1", "2020-04-15 08:00:00", "3", "4.00", "2020-04-15 08:08:00", "300", "B"),
        ("supplier2", "2020-04-15 08:00:00", "2", "2.00", "2020-04-15 08:09:00", "100", "E"),
        ("supplier2", "2020-04-15 08:10:00", "1", "6.00", "2020-04-15 08:17:00", "600", "F")]
    assert '"FIRST_VALUE"' in (checkpoint / "_stategate" / "signature.json").read_text()

    continued, slots = reseeded_by_an_added_min(spark, KEPT_AS_TEXT, tmp_path / "reseeded", "LAST_VALUE(item)")
    assert slots["text"]["shapes"] == ["FIRST_VALUE:m2p10", "LAST_VALUE:t0p18", "LAST_VALUE:i", "LAST_VALUE"]
    assert continued == [row + (low,) for row, low in zip(uninterrupted, ("3.00", "1.00", "6.00"))]


def test_lists_kept_with_nested_arrivals_by_an_earlier_release_go_on_and_re_seed_into_two_longs(
        spark, tmp_path) -> None:
    """Upgrading stategate keeps a deployed LISTAGG's state: the recorded layout's lists go on with
    their arrivals as structs, and the windows equal an uninterrupted run's (values that arrived
    before the restart first). An added aggregate re-seeds them into lists that keep each arrival as
    two longs: the carried values keep their order before every later row's, so the windows are
    the same, and the added MIN counts the rows after the restart."""
    checkpoint, sql = recorded_before(NESTED_ARRIVALS, tmp_path)
    continued = collect(spark, sql, checkpoint, pipeline="Out")
    uninterrupted = collect(spark, sql, tmp_path / "uninterrupted", pipeline="Out")
    prices = [[Decimal(p) for p in ps] for ps in (["4.00", "5.00", "3.00"], ["2.00", "1.00"], ["6.00"])]
    assert continued == uninterrupted == [
        ("supplier1", "2020-04-15 08:00:00", "3", "C,D,B", str(prices[0]), "B"),
        ("supplier2", "2020-04-15 08:00:00", "2", "A,E", str(prices[1]), "E"),
        ("supplier2", "2020-04-15 08:10:00", "1", "F", str(prices[2]), "F")]
    stage = json.loads((checkpoint / "_stategate" / "signature.json").read_text())["pipelines"]["Out"]["stages"][0]
    assert ORDERED_ARRIVALS not in stage["slots"], "the recorded layout goes on as it was written"

    continued, slots = reseeded_by_an_added_min(spark, NESTED_ARRIVALS, tmp_path / "reseeded",
                                                "LAST_VALUE(DISTINCT item)")
    assert slots[ORDERED_ARRIVALS] is True
    assert continued == [row + (low,) for row, low in zip(uninterrupted, ("3.00", "1.00", "6.00"))]


@pytest.mark.parametrize("kept", ["LAST_VALUE(bidtime) AS l, FIRST_VALUE(price) AS f, SUM(price) AS s",
                                  "SUM(price) AS s, LAST_VALUE(bidtime) AS l"])
def test_first_and_last_value_go_on_reordered_or_beside_a_dropped_one(spark, tmp_path, kept: str) -> None:
    """Reordered, FIRST_VALUE and LAST_VALUE go on from their state (FULL); one dropped leaves its
    slot unused, its fields kept in the state's schema, and the other goes on. Both equal an
    uninterrupted run of the new version (the files' order fixed by their modification times)."""
    deployed = query("window_start, supplier_id, SUM(price) AS s, FIRST_VALUE(price) AS f, LAST_VALUE(bidtime) AS l")
    changed = query(f"window_start, supplier_id, {kept}")
    source, whole = tmp_path / "source", tmp_path / "whole"
    for directory in (source, whole):
        write_bids(directory, "a.csv", PART_A)
        os.utime(directory / "a.csv", (1_600_000_000, 1_600_000_000))
    before, result = collect_run(spark, bid_ddl(source) + deployed, tmp_path / "checkpoint")
    for directory in (source, whole):
        write_bids(directory, "b.csv", PART_B, closer=True)
        os.utime(directory / "b.csv", (1_600_000_001, 1_600_000_001))
    after, result = collect_run(spark, bid_ddl(source) + changed, tmp_path / "checkpoint")
    assert result.report is not None and result.report.verdict is Verdict.FULL
    uninterrupted = collect(spark, bid_ddl(whole) + changed, tmp_path / "uninterrupted")
    assert after == [r for r in uninterrupted if r[0] != "2020-04-15 08:00:00"] and len(after) == 4
    assert len(before) == 2, "the first windows closed before the restart"

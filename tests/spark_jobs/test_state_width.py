"""A state row is as wide as Spark's own aggregation keeps for the same SQL (plus the row count, where
the query does not count its rows itself).

Every batch of every job reads and writes its state rows, so what a row holds beyond Spark's own
is paid on every batch for a redeploy that happens once a week. Both engines run the same window
aggregation over the same bids; Spark's state data source reads each one's rows, and their widths
are compared as Spark lays them out (an ``UnsafeRow``: a null bit per field, 8 bytes per field,
and a variable-length part: 16 bytes for a decimal of more than 18 digits).
"""

from __future__ import annotations

import json
import statistics
from decimal import Decimal
from pathlib import Path

import pytest

from pyspark.sql import functions as F
from pyspark.sql import types as T

from tests.spark_jobs.helpers import (BID_COLUMNS, CLOSER, DATA, bid_ddl, collect, collect_run, recorded_checkpoint,
                                      seed_bids, write_recorded)

#: Longs and decimals of up to 18 digits are stored in place; a wider decimal takes 16 bytes more.
_WIDE_DECIMAL = 18


def row_bytes(schema: T.StructType) -> int:
    """The bytes of an ``UnsafeRow`` of ``schema`` without its text (both engines key by the same)."""
    fixed = 8 * ((len(schema.fields) + 63) // 64) + 8 * len(schema.fields)
    variable = 0
    for field in schema.fields:
        if isinstance(field.dataType, T.DecimalType) and field.dataType.precision > _WIDE_DECIMAL:
            variable += 16
        elif isinstance(field.dataType, T.StructType):
            variable += row_bytes(field.dataType)
    return fixed + variable


def state_schema(spark, query: Path) -> tuple[T.StructType, T.StructType]:
    """The key and value schemas of the state of the streaming aggregation checkpointed at ``query``."""
    rows = spark.read.format("statestore").load(str(query))
    assert rows.count() > 0, "the aggregation kept state"
    return rows.schema["key"].dataType, rows.schema["value"].dataType


#: The query as a Spark user writes it and as stategate runs it: sums and extremes of a decimal,
#: extremes of a time, of an integer, and its sum, of a decimal that one of several values is (a
#: CASE's, a COALESCE's); with or without a count of the rows.
BUILTIN = ["sum(price)", "max(price)", "min(bidtime)", "max(CAST(price AS INT))", "sum(CAST(price AS INT))",
           "sum(CASE WHEN price > 10 THEN price END)", "max(coalesce(price, 0))"]
SELECT = ("SUM(price) AS total, MAX(price) AS top, MIN(bidtime) AS first_bid, "
          "MAX(CAST(price AS INT)) AS top_int, SUM(CAST(price AS INT)) AS total_int, "
          "SUM(CASE WHEN price > 10 THEN price END) AS large, MAX(COALESCE(price, 0)) AS top_or_zero")
SINK = ("total DECIMAL(38, 2), top DECIMAL(10, 2), first_bid TIMESTAMP(3), top_int INT, total_int INT, "
        "large DECIMAL(38, 2), top_or_zero DECIMAL(12, 2)")


@pytest.mark.parametrize("counted", [True, False], ids=["with COUNT(*)", "without"])
def test_a_state_row_is_no_wider_than_sparks_own_but_for_a_row_count_it_lacks(spark, tmp_path, counted) -> None:
    """stategate keeps each group's row count, which says which windows exist. Where the query
    counts its rows (COUNT(*)), that count is the row count; otherwise it is the one field more."""
    source = seed_bids(tmp_path)
    count, builtin = ("COUNT(*) AS bids, ", ["count(1)"]) if counted else ("", [])
    sql = (bid_ddl(source) + "CREATE TABLE Out (item STRING, window_start TIMESTAMP(3), "
           f"{'bids BIGINT, ' if counted else ''}{SINK}) WITH ('connector' = 'print');\n"
           f"INSERT INTO Out SELECT item, window_start, {count}{SELECT}\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           "GROUP BY item, window_start, window_end;")
    checkpoint = tmp_path / "checkpoint"
    collect(spark, sql, checkpoint, pipeline="Out")
    ours = [q for q in checkpoint.iterdir() if (q / "state").is_dir()]
    assert len(ours) == 1, "one streaming aggregation"

    theirs = tmp_path / "builtin"
    frame = (spark.readStream.schema(BID_COLUMNS.replace("(3)", "")).csv(str(source))
             .withWatermark("bidtime", "1 second")
             .groupBy(F.window("bidtime", "10 minutes"), "item").agg(*map(F.expr, builtin + BUILTIN)))
    frame.writeStream.format("noop").option("checkpointLocation", str(theirs)) \
        .trigger(availableNow=True).start().awaitTermination()

    our_key, our_value = state_schema(spark, ours[0])
    their_key, their_value = state_schema(spark, theirs)
    assert row_bytes(our_key) == row_bytes(their_key), (our_key, their_key)
    # Window first, as a Spark user groups: RocksDB keeps a window's rows together, so a batch's new
    # and closed windows are a few ranges of keys, not a piece of every key's range.
    assert [f.dataType for f in our_key.fields] == [f.dataType for f in their_key.fields], (our_key, their_key)
    assert row_bytes(our_value) == row_bytes(their_value) + (0 if counted else 8), (our_value, their_value)


#: A checkpoint the release before state rows were kept at Spark's width wrote (commit 9c4fd03):
#: its job's SQL over the first three seed bids, its windows still open. Its slots take values in
#: 38 digits (``SUM:m2``, ``MAX:t``) and its state key has the grouping-set column.
RECORDED = "slots-v4"


def recorded_bids(tmp_path: Path) -> tuple[Path, str]:
    """The recorded checkpoint put where the test runs, its windows still open, and the recorded
    job's SQL there; the rest of the seed bids wait in its source."""
    checkpoint, sql = recorded_checkpoint(RECORDED, tmp_path)
    bids = (DATA / "bids" / "bids.csv").read_text().splitlines(keepends=True)
    source = tmp_path / "bids"
    source.mkdir()
    write_recorded(checkpoint, source / "1.csv", "".join(bids[:3]))
    (source / "2.csv").write_text("".join(bids[3:]))
    (source / "9-closer.csv").write_text(CLOSER)
    return checkpoint, sql


def test_a_checkpoint_of_the_wider_slots_restarts_on_its_own_layout_and_continues(spark, tmp_path) -> None:
    """Upgrading stategate never costs a deployed job its state: the recorded layout is read as
    it was written, and every open window continues where the older release left it."""
    checkpoint, sql = recorded_bids(tmp_path)
    continued = collect(spark, sql, checkpoint, pipeline="Out")
    uninterrupted = collect(spark, sql, tmp_path / "uninterrupted", pipeline="Out")
    assert continued == uninterrupted and len(continued) == 6
    assert "SUM:m2" in (checkpoint / "_stategate" / "signature.json").read_text()


def test_a_checkpoint_keyed_window_last_re_seeds_into_a_layout_keyed_window_first(spark, tmp_path) -> None:
    """The recorded state's key has the window last (and a grouping-set column); an added MIN does
    not fit its slots, so the restart re-seeds into a fresh layout, whose key starts with the window:
    every open window is read from the old key order, and carried whole. The three bids the old
    version saw are alone in their windows, so the added MIN is NULL there and each later bid's
    own price elsewhere; every other column equals an uninterrupted run."""
    checkpoint, sql = recorded_bids(tmp_path)
    added = sql.replace("top DECIMAL(10, 2))", "top DECIMAL(10, 2), low DECIMAL(10, 2))") \
        .replace("MAX(price)\n", "MAX(price), MIN(price)\n")
    assert added.count("MIN(price)") == 1 and added.count("low DECIMAL") == 1
    continued, result = collect_run(spark, added, checkpoint, pipeline="Out")
    assert result.report is not None and "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    assert json.loads((checkpoint / "_stategate" / "signature.json").read_text())["pipelines"]["Out"]["stages"][0][
        "slots"]["window_first"] is True
    uninterrupted = collect(spark, added, tmp_path / "uninterrupted", pipeline="Out")
    seen = {line.split(",")[2] for line in (tmp_path / "bids" / "1.csv").read_text().splitlines()}
    assert len(continued) == len(uninterrupted) == 6 and len(seen) == 3
    assert continued == sorted(row[:-1] + ("NULL",) if row[0] in seen else row for row in uninterrupted)


def test_a_key_spark_types_otherwise_than_flink_keeps_sparks_key_and_writes_flinks_value(spark, tmp_path) -> None:
    """``FLOOR`` of a DOUBLE is a DOUBLE on Flink and a BIGINT on Spark, ``SIGN`` of an INT an INT
    and a DOUBLE. Grouped by them, the state is keyed as Spark's own aggregation keys it (and as
    every deployed checkpoint of such a job is: its key is the state's schema), and the query reads
    the key in Flink's type: its text is Flink's (``12.0``, ``1``)."""
    source = seed_bids(tmp_path)
    keys = "FLOOR(CAST(price AS DOUBLE)), SIGN(CAST(price AS INT) - 3)"
    sql = (bid_ddl(source) + "CREATE TABLE Out (f DOUBLE, s INT, window_start TIMESTAMP(3), f_text STRING, "
           "s_text STRING, bids BIGINT) WITH ('connector' = 'print');\n"
           f"INSERT INTO Out SELECT {keys}, window_start, CAST(FLOOR(CAST(price AS DOUBLE)) AS STRING), "
           "CAST(SIGN(CAST(price AS INT) - 3) AS STRING), COUNT(*)\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           f"GROUP BY {keys}, window_start, window_end;")
    checkpoint = tmp_path / "checkpoint"
    rows = collect(spark, sql, checkpoint, pipeline="Out")
    assert rows and all(f_text == f"{float(f):.1f}" and s_text == str(int(s)) and s_text in ("-1", "0", "1")
                        for f, s, _, f_text, s_text, _ in rows), rows
    (ours,) = [q for q in checkpoint.iterdir() if (q / "state").is_dir()]

    theirs = tmp_path / "builtin"
    frame = (spark.readStream.schema(BID_COLUMNS.replace("(3)", "")).csv(str(source))
             .withWatermark("bidtime", "1 second")
             .groupBy(F.window("bidtime", "10 minutes"), F.expr("floor(CAST(price AS DOUBLE))"),
                      F.expr("sign(CAST(price AS INT) - 3)")).agg(F.count(F.lit(1))))
    frame.writeStream.format("noop").option("checkpointLocation", str(theirs)) \
        .trigger(availableNow=True).start().awaitTermination()
    our_key, their_key = state_schema(spark, ours)[0], state_schema(spark, theirs)[0]
    assert [f.dataType for f in our_key.fields] == [f.dataType for f in their_key.fields], (our_key, their_key)


#: A checkpoint the release before STDDEV and VARIANCE kept a DECIMAL of more than 19 digits as
#: ``Family.WIDE`` wrote (commit 3d64446): STDDEV_POP and VAR_SAMP of a DECIMAL(38, 18) in exact
#: slots (``STDDEV_POP:m18``), whose squares at scale 36 keep two whole digits; both windows open.
SPREADS_EXACT = "spreads-exact"


#: The bids both recorded spread checkpoints read before they were recorded (both windows open).
_SPREAD_BIDS_BEFORE = ["2020-04-15 08:05:00,4.00,C,supplier1", "2020-04-15 08:06:00,2.00,A,supplier2",
                       "2020-04-15 08:07:00,5.00,D,supplier1"]


def _spreads_continued(spark, tmp_path: Path, recorded: str, supplier1_after: list[str]) -> list[tuple]:
    """The rows of the recorded spread checkpoint ``recorded`` restarted by this release with the
    same SQL, once supplier1's bids ``supplier1_after`` (08:08 and 08:09) and supplier2's arrive:
    it re-seeds into ``Family.WIDE`` slots (``v``), and every window equals an uninterrupted run's."""
    checkpoint, sql = recorded_checkpoint(recorded, tmp_path)
    source = tmp_path / "bids"
    source.mkdir()
    after = [*supplier1_after, "2020-04-15 08:09:30,1.00,G,supplier2", "2020-04-15 08:17:00,6.00,F,supplier2"]
    write_recorded(checkpoint, source / "1.csv", "".join(line + "\n" for line in _SPREAD_BIDS_BEFORE))
    (source / "2.csv").write_text("".join(line + "\n" for line in after) + CLOSER)

    continued, result = collect_run(spark, sql, checkpoint, pipeline="Out")
    assert result.report is not None and "stategate.layout.reseed" in {f.rule for f in result.report.findings}
    stage = json.loads((checkpoint / "_stategate" / "signature.json").read_text())["pipelines"]["Out"]["stages"][0]
    assert [s for s in stage["slots"]["plain"]["shapes"] if s.startswith(("STDDEV", "VARIANCE"))] == \
        ["STDDEV_POP:v18", "VARIANCE:v18"]
    assert continued == collect(spark, sql, tmp_path / "uninterrupted", pipeline="Out")
    return continued


def test_a_stddev_of_a_wide_decimal_recorded_exact_re_seeds_and_counts_values_its_squares_lost(spark, tmp_path) -> None:
    """Upgrading stategate keeps a deployed STDDEV's state and ends a wrong result: the recorded
    slots keep the squares of a DECIMAL(38, 18) at scale 36, where the square of a price of 25 does
    not fit, so that window's STDDEV and VARIANCE came out 0. The restart with the same SQL
    re-seeds them into slots that keep squares past the exact ones in DOUBLE: the carried count,
    sum and squares go on, the price of 25 counts, and every window equals an uninterrupted run's."""
    continued = _spreads_continued(spark, tmp_path, SPREADS_EXACT, ["2020-04-15 08:08:00,3.00,B,supplier1",
                                                                    "2020-04-15 08:09:00,25.00,E,supplier1"])
    # 4, 5, 3 and 25: a mean of 9.25, squared distances summing to 332.75; 2 and 1; 6 alone.
    assert [row[2:] for row in continued] == [
        ("4", "9.120718173477350000", "110.916666666666670000"),
        ("2", "0.500000000000000000", "0.500000000000000000"),
        ("1", "0E-18", "NULL")], continued


#: A checkpoint the release before ``Family.WIDE`` summed large values in DOUBLE wrote (commit
#: ace0a4e): STDDEV_POP and VAR_SAMP of a DECIMAL(38, 18) column whose values' sum the slots keep
#: exactly at scale 18 (``STDDEV_POP:w18``), so in 38 digits: below 10^20; both windows open.
SPREADS_EXACT_SUM = "spreads-wide-exact-sum"


def test_a_stddev_whose_values_sum_past_their_decimal_re_seeds_and_is_computed_as_flink_computes_it(spark,
                                                                                                   tmp_path) -> None:
    """Upgrading stategate keeps a deployed STDDEV's state and ends a NULL where Flink has a number:
    the recorded slots sum a DECIMAL(38, 18)'s values exactly at scale 18, which two values of
    5 * 10^19 and 6 * 10^19 overflow (that window's STDDEV came out NULL). The restart with the same
    SQL re-seeds them into slots that sum such values in DOUBLE, as Flink computes every STDDEV:
    the carried count, sum and squares go on, and every window equals an uninterrupted run's."""
    continued = _spreads_continued(spark, tmp_path, SPREADS_EXACT_SUM,
                                   ["2020-04-15 08:08:00,60000000000000000000,B,supplier1",
                                    "2020-04-15 08:09:00,50000000000000000000,E,supplier1"])
    # 4, 5, 6 * 10^19 and 5 * 10^19: a STDDEV of 2.77 * 10^19; their VAR_SAMP, 1.03 * 10^39, is past
    # a DECIMAL(38, 18), NULL as Flink's cast of it is. 2 and 1; 6 alone.
    spread = Decimal(continued[0][3])
    assert abs(spread / Decimal(statistics.pstdev([4, 5, 6 * 10 ** 19, 5 * 10 ** 19])) - 1) < Decimal("1e-12")
    assert [row[2:] for row in continued] == [
        ("4", continued[0][3], "NULL"),
        ("2", "0.500000000000000000", "0.500000000000000000"),
        ("1", "0E-18", "NULL")], continued

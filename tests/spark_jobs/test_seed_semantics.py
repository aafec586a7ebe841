"""Every example table of seed 003, reproduced on the Bid data by the compiled job.

What closes a window on bounded input: the watermark (max event time - 1 s) must pass the window's
end. The seed's last bid is 08:17, so the data alone closes no window after 08:15; a bid at 2020-04-16
00:00 (``CLOSER``) closes them all and lands in a window of its own that never closes.
"""

from __future__ import annotations

import re

import pytest

from tests.spark_jobs.helpers import bid_ddl, collect, seed_bids

TUMBLE = ("SELECT window_start, window_end, SUM(price) AS total_price\n"
          "  FROM TABLE(\n    TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
          "  GROUP BY window_start, window_end;")
HOP = ("SELECT window_start, window_end, SUM(price) AS total_price\n  FROM TABLE(\n"
       "    HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))\n"
       "  GROUP BY window_start, window_end;")
CUMULATE = ("SELECT window_start, window_end, SUM(price) AS total_price\n  FROM TABLE(\n"
            "    CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))\n"
            "  GROUP BY window_start, window_end;")
SESSION_PARTITIONED = (
    "SELECT window_start, window_end, supplier_id, SUM(price) AS total_price\n"
    "           FROM TABLE(\n               SESSION(TABLE Bid PARTITION BY supplier_id, DESCRIPTOR(bidtime), "
    "INTERVAL '2' MINUTES))\n           GROUP BY window_start, window_end, supplier_id;")
SESSION = ("SELECT window_start, window_end, SUM(price) AS total_price\n           FROM TABLE(\n"
           "               SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES))\n"
           "           GROUP BY window_start, window_end;")
GROUPING_SETS = ("SELECT window_start, window_end, supplier_id, SUM(price) AS total_price\n  FROM TABLE(\n"
                 "    TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
                 "  GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ());")
ROLLUP = ("SELECT window_start, window_end, supplier_id, SUM(price) AS total_price\nFROM TABLE(\n"
          "    TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
          "GROUP BY window_start, window_end, ROLLUP (supplier_id);")
CUBE = ("SELECT window_start, window_end, item, supplier_id, SUM(price) AS total_price\n  FROM TABLE(\n"
        "    TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
        "  GROUP BY window_start, window_end, CUBE (supplier_id, item);")
CUBE_AS_SETS = CUBE.replace(
    "CUBE (supplier_id, item)",
    "GROUPING SETS (\n      (supplier_id, item),\n      (supplier_id      ),\n      (             item),\n"
    "      (                 )\n)")
CASCADE = (
    "CREATE VIEW window1 AS\n"
    "SELECT window_start AS window_5mintumble_start, window_end AS window_5mintumble_end, "
    "window_time AS rowtime, SUM(price) AS partial_price\n  FROM TABLE(\n"
    "    TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))\n"
    "  GROUP BY supplier_id, window_start, window_end, window_time;\n"
    "SELECT window_start, window_end, SUM(partial_price) AS total_price\n  FROM TABLE(\n"
    "      TUMBLE(TABLE window1, DESCRIPTOR(rowtime), INTERVAL '10' MINUTES))\n"
    "  GROUP BY window_start, window_end;")
LEGACY = ("SELECT\n  supplier_id,\n  TUMBLE_START(bidtime, INTERVAL '10' MINUTE) AS wStart,\n  SUM(price)\n"
          "FROM Bid\nGROUP BY\n  TUMBLE(bidtime, INTERVAL '10' MINUTE),\n  supplier_id;")


def t(*rows: str) -> list[tuple]:
    """A seed table, written as its printed rows: '2020-04-15 08:00 | 2020-04-15 08:10 | 11.00'."""
    out = []
    for row in rows:
        cells = [c.strip() for c in row.split("|")]
        out.append(tuple(f"{c}:00" if len(c) == 16 and c[13] == ":" else c for c in cells))
    return sorted(out)


TUMBLE_TABLE = t("2020-04-15 08:00 | 2020-04-15 08:10 | 11.00", "2020-04-15 08:10 | 2020-04-15 08:20 | 10.00")
SETS_TABLE = t(
    "2020-04-15 08:00 | 2020-04-15 08:10 | NULL | 11.00",
    "2020-04-15 08:00 | 2020-04-15 08:10 | supplier2 | 5.00",
    "2020-04-15 08:00 | 2020-04-15 08:10 | supplier1 | 6.00",
    "2020-04-15 08:10 | 2020-04-15 08:20 | NULL | 10.00",
    "2020-04-15 08:10 | 2020-04-15 08:20 | supplier2 | 9.00",
    "2020-04-15 08:10 | 2020-04-15 08:20 | supplier1 | 1.00",
)
CUBE_TABLE = SETS_TABLE  # per (supplier_id) and () exactly as above, plus the item sets checked below

EXAMPLES = {
    "tumble": (TUMBLE, TUMBLE_TABLE),
    "hop": (HOP, t(
        "2020-04-15 08:00 | 2020-04-15 08:10 | 11.00",
        "2020-04-15 08:05 | 2020-04-15 08:15 | 15.00",
        "2020-04-15 08:10 | 2020-04-15 08:20 | 10.00",
        "2020-04-15 08:15 | 2020-04-15 08:25 | 6.00")),
    "cumulate": (CUMULATE, t(
        "2020-04-15 08:00 | 2020-04-15 08:06 | 4.00",
        "2020-04-15 08:00 | 2020-04-15 08:08 | 6.00",
        "2020-04-15 08:00 | 2020-04-15 08:10 | 11.00",
        "2020-04-15 08:10 | 2020-04-15 08:12 | 3.00",
        "2020-04-15 08:10 | 2020-04-15 08:14 | 4.00",
        "2020-04-15 08:10 | 2020-04-15 08:16 | 4.00",
        "2020-04-15 08:10 | 2020-04-15 08:18 | 10.00",
        "2020-04-15 08:10 | 2020-04-15 08:20 | 10.00")),
    "session-partitioned": (SESSION_PARTITIONED, t(
        "2020-04-15 08:05 | 2020-04-15 08:09 | supplier1 | 6.00",
        "2020-04-15 08:09 | 2020-04-15 08:13 | supplier2 | 8.00",
        "2020-04-15 08:13 | 2020-04-15 08:15 | supplier1 | 1.00",
        "2020-04-15 08:17 | 2020-04-15 08:19 | supplier2 | 6.00")),
    "session": (SESSION, t(
        "2020-04-15 08:05 | 2020-04-15 08:15 | 15.00",
        "2020-04-15 08:17 | 2020-04-15 08:19 | 6.00")),
    "grouping-sets": (GROUPING_SETS, SETS_TABLE),
    "rollup": (ROLLUP, SETS_TABLE),
    "cascade": (CASCADE, TUMBLE_TABLE),
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_seed_003_table(spark, tmp_path, name: str) -> None:
    sql, expected = EXAMPLES[name]
    source = seed_bids(tmp_path)
    assert collect(spark, bid_ddl(source) + sql, tmp_path / "checkpoint") == expected


#: Names Flink takes in backticks that Spark reads as something else unless they are quoted too: a
#: space, a dot (a nested field to Spark) and a backtick (written twice).
QUOTED_NAMES = {"bidtime": "`bid time`", "price": "`pri``ce`", "item": "`it.em`", "supplier_id": "`supplier id`"}


def with_quoted_names(sql: str) -> str:
    """``sql`` over the Bid table with its columns named :data:`QUOTED_NAMES`."""
    names = r"\b(" + "|".join(QUOTED_NAMES) + r")\b"
    return re.sub(names, lambda found: QUOTED_NAMES[found.group(1)], sql)


@pytest.mark.parametrize("name", ["session-partitioned", "cascade"])  # HOP: the test after this one
def test_seed_003_table_over_columns_whose_names_need_quoting(spark, tmp_path, name: str) -> None:
    """A column may be named anything Flink quotes: its event time, group key and aggregated values
    are read as Flink reads them (the event time's was read as Spark SQL, and failed the job)."""
    sql, expected = EXAMPLES[name]
    source = seed_bids(tmp_path)
    assert collect(spark, with_quoted_names(bid_ddl(source) + sql), tmp_path / "checkpoint") == expected


def test_aggregates_in_arrival_order_over_columns_whose_names_need_quoting(spark, tmp_path) -> None:
    """A source read with each row's arrival (its file parsed line by line) takes the same names."""
    source = seed_bids(tmp_path)
    sql = ("SELECT window_start, supplier_id, FIRST_VALUE(price), LAST_VALUE(item), LISTAGG(item), ARRAY_AGG(price),\n"
           "  COLLECT(item), COUNT(DISTINCT item), MAX(bidtime)\n"
           "FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))\n"
           "GROUP BY window_start, window_end, supplier_id")
    plain = collect(spark, bid_ddl(source) + sql, tmp_path / "plain")
    assert len(plain) == 7  # supplier1 in 3 windows, supplier2 in 4
    assert collect(spark, with_quoted_names(bid_ddl(source) + sql), tmp_path / "quoted") == plain


def test_cube_equals_its_grouping_sets(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    cube = collect(spark, bid_ddl(source) + CUBE, tmp_path / "cube")
    sets = collect(spark, bid_ddl(source) + CUBE_AS_SETS, tmp_path / "sets")
    assert cube == sets
    # (supplier_id) and () sets: the seed's GROUPING SETS table, with item NULL.
    rolled = sorted((r[0], r[1], r[3], r[4]) for r in cube if r[2] == "NULL")
    assert rolled == SETS_TABLE
    per_item = sorted((r[0], r[2], r[4]) for r in cube if r[3] == "NULL" and r[2] != "NULL")
    assert per_item == sorted([
        ("2020-04-15 08:00:00", "A", "2.00"), ("2020-04-15 08:00:00", "C", "4.00"),
        ("2020-04-15 08:00:00", "D", "5.00"), ("2020-04-15 08:10:00", "B", "3.00"),
        ("2020-04-15 08:10:00", "E", "1.00"), ("2020-04-15 08:10:00", "F", "6.00")])


def test_legacy_group_window_with_auxiliary_start(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    assert collect(spark, bid_ddl(source) + LEGACY, tmp_path / "ck") == sorted([
        ("supplier1", "2020-04-15 08:00:00", "6.00"), ("supplier2", "2020-04-15 08:00:00", "5.00"),
        ("supplier1", "2020-04-15 08:10:00", "1.00"), ("supplier2", "2020-04-15 08:10:00", "9.00")])


def test_legacy_session_window_is_per_group_key(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = ("SELECT SESSION_START(bidtime, INTERVAL '2' MINUTE), SESSION_END(bidtime, INTERVAL '2' MINUTE),\n"
           "  supplier_id, SUM(price)\nFROM Bid GROUP BY supplier_id, SESSION(bidtime, INTERVAL '2' MINUTE)")
    assert collect(spark, bid_ddl(source) + sql, tmp_path / "ck") == EXAMPLES["session-partitioned"][1]


def test_aggregate_functions_distinct_and_filter(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    (source / "1-more.csv").write_text("2020-04-15 08:08:00,4.00,C,supplier1\n2020-04-15 08:08:30,,C,supplier1\n")
    sql = ("SELECT window_start, supplier_id, COUNT(*), COUNT(price), COUNT(DISTINCT item), SUM(DISTINCT price),\n"
           "  MIN(price), MAX(item), AVG(price), SUM(price) FILTER (WHERE price > 2), COUNT(*) FILTER (WHERE item = 'C')\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           "GROUP BY window_start, window_end, supplier_id")
    rows = collect(spark, bid_ddl(source) + sql, tmp_path / "ck")
    assert rows == sorted([
        # 08:05 C 4, 08:07 A 2, 08:08 C 4, 08:08:30 C NULL
        ("2020-04-15 08:00:00", "supplier1", "4", "3", "2", "6.00", "2.00", "C", "3.333333", "8.00", "3"),
        ("2020-04-15 08:00:00", "supplier2", "1", "1", "1", "5.00", "5.00", "D", "5.000000", "5.00", "0"),
        ("2020-04-15 08:10:00", "supplier1", "1", "1", "1", "1.00", "1.00", "E", "1.000000", "NULL", "0"),
        ("2020-04-15 08:10:00", "supplier2", "2", "2", "2", "9.00", "3.00", "F", "4.500000", "9.00", "0"),
    ])


def test_time_and_floating_point_aggregates(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = ("SELECT window_start, supplier_id, MIN(bidtime), MAX(bidtime), SUM(CAST(price AS DOUBLE)),\n"
           "  MIN(CAST(price AS DOUBLE)), MAX(CAST(price AS DOUBLE)), AVG(CAST(price AS DOUBLE))\n"
           "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           "GROUP BY window_start, window_end, supplier_id")
    assert collect(spark, bid_ddl(source) + sql, tmp_path / "ck") == sorted([
        ("2020-04-15 08:00:00", "supplier1", "2020-04-15 08:05:00", "2020-04-15 08:07:00", "6.0", "2.0", "4.0", "3.0"),
        ("2020-04-15 08:00:00", "supplier2", "2020-04-15 08:09:00", "2020-04-15 08:09:00", "5.0", "5.0", "5.0", "5.0"),
        ("2020-04-15 08:10:00", "supplier1", "2020-04-15 08:13:00", "2020-04-15 08:13:00", "1.0", "1.0", "1.0", "1.0"),
        ("2020-04-15 08:10:00", "supplier2", "2020-04-15 08:11:00", "2020-04-15 08:17:00", "9.0", "3.0", "6.0", "4.5"),
    ])


def test_window_top_n(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = ("SELECT window_start, supplier_id, price, rownum FROM (\n"
           "  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum\n"
           "  FROM (SELECT window_start, window_end, supplier_id, SUM(price) AS price, COUNT(*) AS cnt\n"
           "        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           "        GROUP BY window_start, window_end, supplier_id)\n"
           ") WHERE rownum <= 1")
    assert collect(spark, bid_ddl(source) + sql, tmp_path / "ck") == sorted([
        ("2020-04-15 08:00:00", "supplier1", "6.00", "1"), ("2020-04-15 08:10:00", "supplier2", "9.00", "1")])


def test_projection_filter_and_view_before_the_window(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    sql = ("CREATE TEMPORARY VIEW Cheap AS SELECT bidtime, price * 2 AS doubled, UPPER(supplier_id) AS s\n"
           "  FROM Bid WHERE price < 5;\n"
           "SELECT window_start, s, SUM(doubled) AS total, MAX(doubled) + 1 AS top_plus_one\n"
           "FROM TABLE(TUMBLE(TABLE Cheap, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
           "GROUP BY s, window_start, window_end")
    assert collect(spark, bid_ddl(source) + sql, tmp_path / "ck") == sorted([
        ("2020-04-15 08:00:00", "SUPPLIER1", "12.00", "9.00"),
        ("2020-04-15 08:10:00", "SUPPLIER1", "2.00", "3.00"),
        ("2020-04-15 08:10:00", "SUPPLIER2", "6.00", "7.00"),
    ])


def test_a_window_stays_open_until_the_watermark_passes_its_end(spark, tmp_path) -> None:
    source = seed_bids(tmp_path, closing=False)
    # Last bid 08:17 -> watermark 08:16:59: the 08:00-08:10 window closed, 08:10-08:20 did not.
    assert collect(spark, bid_ddl(source) + TUMBLE, tmp_path / "ck") == TUMBLE_TABLE[:1]

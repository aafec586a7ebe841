"""The job model: lineage, normalisation of intervals and Top-N bounds, and the DDL it reads."""

from __future__ import annotations

import pytest

from stategate.analyzer import SQLModelError, Verdict, build, compare
from stategate.analyzer.windows import Hop, Tumble
from tests.analyzer.seed_cases import legacy, topn, tvf

BASE = tvf("a, sum(b) AS total, max(c) AS biggest")


def aggregates_of(sql: str) -> list[str]:
    aggregate = build(sql).pipelines[0].aggregate
    assert aggregate is not None
    return [a.identity for a in aggregate.aggregates]


def test_lineage_goes_through_views_and_subqueries_to_source_columns() -> None:
    sql = (
        "CREATE TEMPORARY VIEW V1 AS SELECT a, b * 2 AS b2, c, ts FROM MyTable;\n"
        "CREATE TEMPORARY VIEW V2 AS SELECT a, b2 AS doubled, c, ts FROM V1;\n"
        "CREATE TEMPORARY VIEW V3 AS SELECT * FROM (SELECT * FROM V2);\n"
        + tvf("a, sum(doubled), max(c)", source="V3")
    )
    assert aggregates_of(sql) == ["SUM(MyTable.b * 2)", "MAX(MyTable.c)"]


def test_renaming_aliases_views_and_subqueries_is_full() -> None:
    renamed = (
        "CREATE TEMPORARY VIEW Renamed AS SELECT a AS k, b AS v, c AS w, ts FROM MyTable;\n"
        + tvf("k AS a, sum(v) AS s, max(w) AS m", group="k, window_start, window_end", source="Renamed")
    )
    report = compare(BASE, renamed)
    assert report.verdict is Verdict.FULL, report.findings
    assert report.aggregates.kept == ("SUM(MyTable.b)", "MAX(MyTable.c)")


def test_changing_how_an_input_is_computed_is_a_modification() -> None:
    changed = ("CREATE TEMPORARY VIEW V AS SELECT a, b + 1 AS b, c, ts FROM MyTable;\n"
               + tvf("a, sum(b) AS total, max(c) AS biggest", source="V"))
    report = compare(BASE, changed)
    assert report.verdict is Verdict.PARTIAL
    assert report.aggregates.added == ("SUM(MyTable.b + 1)",)
    assert report.aggregates.dropped == ("SUM(MyTable.b)",)


def test_state_neutral_edits_are_full() -> None:
    edited = (
        "-- a comment\nselect a,\n   SUM(((b))) as t2,   -- renamed, redundant parentheses\n   MAX(c)\n"
        "from table(tumble(table MyTable, descriptor(ts), interval '60' second))\n"
        "group by a, window_start, window_end"
    )
    report = compare(BASE, edited)
    assert report.verdict is Verdict.FULL, report.findings


def test_grouping_parentheses_are_part_of_the_calculation() -> None:
    old, new = tvf("a, SUM((b + c) * 2) AS s"), tvf("a, SUM(b + c * 2) AS s")
    assert compare(old, new).aggregates.added == ("SUM(MyTable.b + MyTable.c * 2)",)


def test_identifiers_are_case_sensitive() -> None:
    report = compare(BASE, tvf("a, sum(B) AS total, max(c) AS biggest"))
    assert report.verdict is Verdict.PARTIAL
    assert report.aggregates.added == ("SUM(MyTable.B)",)


@pytest.mark.parametrize("old, new", [
    ("INTERVAL '300' SECOND", "INTERVAL '5' MINUTE"),
    ("INTERVAL '1' HOUR", "INTERVAL '60' MINUTES"),
    ("INTERVAL '1' DAY", "INTERVAL '24' HOUR"),
    ("INTERVAL '1' MINUTE", "INTERVAL '60000' MILLISECOND"),
])
def test_interval_sizes_compare_by_value(old: str, new: str) -> None:
    assert compare(tvf("a, sum(b)", size=old), tvf("a, sum(b)", size=new)).verdict is Verdict.FULL
    model = build(tvf("a, sum(b)", size=new))
    assert model.pipelines[0].aggregate.window.shape == build(tvf("a, sum(b)", size=old)).pipelines[0].aggregate.window.shape


def test_hop_and_cumulate_keep_slide_and_size_apart() -> None:
    hop = build("SELECT SUM(price) FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, "
                "INTERVAL '10' MINUTES)) GROUP BY window_start, window_end")
    window = hop.pipelines[0].aggregate.window
    assert window.shape == Hop(slide_ms=300_000, size_ms=600_000)
    report = compare(
        "SELECT SUM(price) FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, "
        "INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
        "SELECT SUM(price) FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, "
        "INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
    )
    assert report.verdict is Verdict.INCOMPATIBLE
    assert [f.rule for f in report.findings] == ["window-tvf.window.slide"]


@pytest.mark.parametrize("old, new", [("rk < 3", "rk <= 2"), ("rk <= 1", "rk = 1"), ("rk < 4", "rk BETWEEN 1 AND 3"),
                                      ("rk < 4", "3 >= rk"), ("rk <= 2", "NOT rk > 2"), ("rk <= 3", "rk < 2 + 2"),
                                      ("rk <= 3", "rk <= CAST(3 AS BIGINT)"), ("rk BETWEEN 2 AND 3", "rk > 1 AND rk < 4"),
                                      ("rk = 2", "2 = rk"), ("rk = 2", "rk BETWEEN 2 AND 2"),
                                      ("rk BETWEEN 2 AND 4", "rk <= 5 AND rk >= 2 AND 4 >= rk")])
def test_top_n_bounds_are_normalised(old: str, new: str) -> None:
    assert compare(topn(where=old), topn(where=new)).verdict is Verdict.FULL
    assert build(topn(where=new)).pipelines[0].topn == build(topn(where=old)).pipelines[0].topn


@pytest.mark.parametrize("where, ranks", [("rk < 3", (1, 2)), ("3 > rk", (1, 2)), ("rk = 2", (2, 2)),
                                          ("rk BETWEEN 2 AND 3", (2, 3)), ("rk >= 2 AND rk < 4", (2, 3)),
                                          ("rk <= 3 AND rk <= 2", (1, 2)), ("rk >= 0 AND rk <= 2", (1, 2))])
def test_a_top_n_keeps_the_rank_range_flink_reads_from_its_filter(where: str, ranks: tuple[int, int]) -> None:
    """Flink 2.3's planner reads a constant rank range (``rankStart``, ``rankEnd``) from each of
    these filters (probed with EXPLAIN): the literal on either side, BETWEEN, a lower bound."""
    kept = build(topn(where=where)).pipelines[0].topn
    assert (kept.first, kept.limit) == ranks


@pytest.mark.parametrize("where", ["rk <= 0", "rk < 1", "rk BETWEEN 3 AND 2", "rk <= 2 AND rk > 2", "rk = -1"])
def test_a_rank_filter_that_keeps_no_rank_is_an_error(where: str) -> None:
    with pytest.raises(SQLModelError, match="filtered to no rank"):
        build(topn(where=where), source="job.sql")


def test_the_ranks_kept_changed_is_incompatible_and_says_which() -> None:
    report = compare(topn(where="rk <= 3"), topn(where="rk BETWEEN 2 AND 3"))
    assert report.verdict is Verdict.INCOMPATIBLE
    [finding] = [f for f in report.findings if f.rule == "window-topn.n.changed"]
    assert "ranks kept changed from 1-3 to 2-3" in finding.message and finding.after == "rk BETWEEN 2 AND 3"


def test_a_filter_beside_the_rank_is_kept_for_the_ranked_rows_and_its_change_is_for_a_human() -> None:
    """Flink ranks, then filters the ranked rows (a Calc after its WindowRank). The same filter
    on both sides changes nothing; a changed one is outside seed 002's rules."""
    kept = build(topn(where="rk < 3 AND b > 10")).pipelines[0].topn
    assert (kept.first, kept.limit) == (1, 2) and [f.written for f in kept.filters] == ["b > 10"]
    same = compare(topn(where="rk < 3 AND b > 10", outer="a, b, c, window_start"),
                   topn(where="b > 10 AND rk <= 2", outer="a, b, c, window_start, window_end"))
    assert same.verdict is Verdict.FULL
    changed = compare(topn(where="rk < 3 AND b > 10"), topn(where="rk < 3 AND b > 20"))
    assert changed.verdict is Verdict.UNKNOWN
    assert [f.rule for f in changed.findings if f.effect is Verdict.UNKNOWN] == ["window-topn.filter.changed"]


@pytest.mark.parametrize("where", ["rk <= 3 AND rk <> 2", "rk <= 3 AND rk <= b", "rk <= 3 AND rk + b > 4"])
def test_any_other_condition_on_the_rank_is_outside_the_rules(where: str) -> None:
    [unsupported] = build(topn(where=where)).pipelines[0].unsupported
    assert unsupported.startswith("filter beside the Top-N rank")
    assert compare(topn(where="rk <= 3"), topn(where=where)).verdict is Verdict.UNKNOWN


@pytest.mark.parametrize("where", ["rk IN (1, 2)", "rk <= 3 OR b > 1", "rk <= 2.5", "rk <= b"])
def test_a_rank_filter_flink_reads_no_constant_range_from_is_an_error(where: str) -> None:
    with pytest.raises(SQLModelError, match="without an upper bound"):
        build(topn(where=where))


def test_session_partition_keys_are_part_of_the_window() -> None:
    old = ("SELECT window_start, window_end, supplier_id, SUM(price) FROM TABLE(SESSION(TABLE Bid "
           "PARTITION BY supplier_id, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)) "
           "GROUP BY window_start, window_end, supplier_id")
    new = old.replace("PARTITION BY supplier_id, ", "")
    report = compare(old, new)
    assert report.verdict is Verdict.INCOMPATIBLE
    assert any(f.rule == "window-tvf.window.partition-keys" for f in report.findings)


BID_DDL = """
CREATE TABLE Bid (
  bidtime TIMESTAMP(3),
  price DECIMAL(10, 2),
  item STRING,
  supplier_id STRING,
  pt AS PROCTIME(),
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/bids', 'format' = 'csv');
"""


def test_ddl_gives_time_attributes_options_and_watermark() -> None:
    table = build(BID_DDL + "SELECT * FROM Bid").tables["Bid"]
    assert table.rowtime == "bidtime" and table.proctime == "pt"
    assert table.watermark_delay_ms == 1000
    assert dict(table.options) == {"connector": "filesystem", "path": "/data/bids", "format": "csv"}
    assert [c.type for c in table.columns[:2]] == ["TIMESTAMP(3)", "DECIMAL(10, 2)"]


def test_rowtime_to_proctime_is_incompatible_with_ddl() -> None:
    query = "SELECT item, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR({}), INTERVAL '1' MINUTE)) GROUP BY item, window_start, window_end"
    report = compare(BID_DDL + query.format("bidtime"), BID_DDL + query.format("pt"))
    finding = next(f for f in report.findings if f.rule.endswith("time-attribute"))
    assert "rowtime" in finding.message and "proctime" in finding.message


def test_a_computed_rowtime_is_a_rowtime_and_its_computation_is_part_of_it() -> None:
    """Nexmark's shape: the time attribute is a computed column carrying the WATERMARK."""
    ddl = BID_DDL.replace("WATERMARK FOR bidtime AS bidtime", "ts AS CASE WHEN price > 3 THEN bidtime ELSE bidtime - INTERVAL '1' MINUTE END,\n"
                          "  WATERMARK FOR ts AS ts")
    query = "SELECT item, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY item, window_start, window_end"
    assert build(ddl + query).pipelines[0].aggregate.window.time_kind == "rowtime"
    assert compare(ddl + query, ddl + query).verdict is Verdict.FULL
    report = compare(ddl + query, ddl.replace("price > 3", "price > 4") + query)
    assert report.verdict is Verdict.INCOMPATIBLE
    finding = next(f for f in report.findings if f.rule.endswith("time-attribute"))
    assert finding.message == (
        "time attribute ts (rowtime) is computed differently: CASE WHEN Bid.price > 3 THEN Bid.bidtime ELSE "
        "Bid.bidtime - INTERVAL '1' MINUTE END before, CASE WHEN Bid.price > 4 THEN Bid.bidtime ELSE "
        "Bid.bidtime - INTERVAL '1' MINUTE END now")


NESTED_DDL = """CREATE TABLE datagen (
  event_type INT,
  person ROW<id BIGINT, dateTime TIMESTAMP(3)>,
  bid ROW(auction BIGINT, price BIGINT, dateTime TIMESTAMP(3)),
  dateTime AS CASE WHEN event_type = 0 THEN person.dateTime ELSE bid.dateTime END,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/events', 'format' = 'json');
CREATE VIEW bid AS SELECT bid.auction, datagen.bid.price, dateTime FROM datagen WHERE event_type = 2;
"""


def test_nested_rows_parse_and_their_fields_resolve_as_in_flink() -> None:
    """Nexmark's source: ROW types (both spellings), fields read as ``bid.price`` or
    ``datagen.bid.price``, and a rowtime computed from fields."""
    query = ("SELECT auction, window_start, {} FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), "
             "INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end")
    model = build(NESTED_DDL + query.format("SUM(price)"))
    table = model.tables["datagen"]
    assert [c.type for c in table.columns[1:3]] == ["ROW<id BIGINT, dateTime TIMESTAMP(3)>",
                                                    "ROW<auction BIGINT, price BIGINT, dateTime TIMESTAMP(3)>"]
    aggregate = model.pipelines[0].aggregate
    assert [k.value.key for k in aggregate.group_keys if not k.is_window] == ["datagen.bid.auction"]
    assert [a.identity for a in aggregate.aggregates] == ["SUM(datagen.bid.price)"]
    assert aggregate.window.time_kind == "rowtime"
    report = compare(NESTED_DDL + query.format("SUM(price)"), NESTED_DDL + query.format("SUM(price), MAX(price)"))
    assert report.verdict is Verdict.PARTIAL and report.aggregates.added == ("MAX(datagen.bid.price)",)
    with pytest.raises(SQLModelError, match="unknown table or alias 'nope'"):
        build(NESTED_DDL + query.format("SUM(nope.price)"))


def test_a_change_no_rule_covers_is_unknown_never_full() -> None:
    query = "SELECT item, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) GROUP BY item, window_start, window_end"
    filtered = query.replace("TABLE Bid,", "TABLE Bid2,")
    report = compare(BID_DDL + "CREATE TEMPORARY VIEW Bid2 AS SELECT * FROM Bid;\n" + query,
                     BID_DDL + "CREATE TEMPORARY VIEW Bid2 AS SELECT * FROM Bid WHERE price > 2;\n" + filtered)
    assert report.verdict is Verdict.UNKNOWN
    assert [f.rule for f in report.findings] == ["stategate.row-filter.changed"]
    watermark = compare(BID_DDL + query, BID_DDL.replace("'1' SECOND", "'5' SECOND") + query)
    assert watermark.verdict is Verdict.UNKNOWN
    assert any(f.rule == "stategate.watermark.changed" for f in watermark.findings)


def test_a_type_change_of_an_aggregated_column_is_incompatible() -> None:
    query = "SELECT item, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE)) GROUP BY item, window_start, window_end"
    report = compare(BID_DDL + query, BID_DDL.replace("DECIMAL(10, 2)", "DOUBLE") + query)
    assert report.verdict is Verdict.INCOMPATIBLE
    assert any(f.rule == "stategate.column-type.changed" for f in report.findings)


def test_pipelines_match_by_sink_and_unmatched_ones_are_unknown() -> None:
    q = "INSERT INTO {} " + tvf("a, sum(b)")
    report = compare(q.format("SinkA"), q.format("SinkB"))
    assert report.verdict is Verdict.UNKNOWN
    assert {f.rule for f in report.findings} == {"stategate.pipeline.added", "stategate.pipeline.removed"}
    two = q.format("SinkA") + "\n" + q.format("SinkB")
    changed = q.format("SinkA") + "\n" + ("INSERT INTO SinkB " + tvf("a, sum(b), count(*)"))
    report = compare(two, changed)
    assert report.verdict is Verdict.PARTIAL
    assert report.aggregates.added == ("SinkB: COUNT(*)",)


def test_cascaded_windows_compare_the_upstream_window_too() -> None:
    view = ("CREATE VIEW window1 AS SELECT window_start AS ws, window_end AS we, window_time AS rowtime, "
            "SUM(price) AS partial_price FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{}' MINUTES)) "
            "GROUP BY supplier_id, window_start, window_end, window_time;\n")
    outer = ("SELECT window_start, window_end, SUM(partial_price) AS total_price FROM TABLE(TUMBLE(TABLE window1, "
             "DESCRIPTOR(rowtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end;")
    model = build(BID_DDL + view.format(5) + outer)
    aggregate = model.pipelines[0].aggregate
    assert aggregate.window.time_kind == "rowtime"
    assert aggregate.source.window.shape == Tumble(300_000)
    report = compare(BID_DDL + view.format(5) + outer, BID_DDL + view.format(2) + outer)
    assert report.verdict is Verdict.INCOMPATIBLE
    assert any(f.rule == "window-tvf.window.size" and f.pipeline == "upstream window" for f in report.findings)


@pytest.mark.parametrize("outer", [
    "SELECT window_start, window_end, SUM(partial_price) AS total FROM TABLE(TUMBLE(TABLE window1, DESCRIPTOR(rowtime), "
    "INTERVAL '10' MINUTES)) {} GROUP BY window_start, window_end;",
    "SELECT ws, we, SUM(partial_price) AS total FROM window1 {} GROUP BY ws, we;",
], ids=["cascaded window", "whole windows"])
def test_a_where_over_the_windows_a_cascade_reads_filters_its_input_and_its_change_is_for_a_human(outer: str) -> None:
    """Flink filters the upstream windows' rows before the next aggregation: a row filter of that
    aggregation, as a WHERE over a source is (it was refused as a filter after a window aggregation)."""
    view = ("CREATE VIEW window1 AS SELECT window_start AS ws, window_end AS we, window_time AS rowtime, "
            "SUM(price) AS partial_price FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) "
            "GROUP BY supplier_id, window_start, window_end, window_time;\n")
    kept = build(BID_DDL + view + outer.format("WHERE partial_price > 10")).pipelines[0]
    assert not kept.unsupported and [f.written for f in kept.aggregate.filters] == ["partial_price > 10"]
    same = compare(BID_DDL + view + outer.format("WHERE partial_price > 10"),
                   BID_DDL + view + "-- moved\n" + outer.format("WHERE partial_price > 10"))
    assert same.verdict is Verdict.FULL
    changed = compare(BID_DDL + view + outer.format("WHERE partial_price > 10"),
                      BID_DDL + view + outer.format("WHERE partial_price > 20"))
    assert changed.verdict is Verdict.UNKNOWN
    assert "stategate.row-filter.changed" in {f.rule for f in changed.findings}


def test_grouping_sets_rollup_and_cube_expand_to_the_same_sets() -> None:
    base = "SELECT window_start, window_end, supplier_id, item, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end, {}"
    cube = build(base.format("CUBE (supplier_id, item)")).pipelines[0].aggregate.grouping_sets
    sets = build(base.format("GROUPING SETS ((supplier_id, item), (supplier_id), (item), ())")).pipelines[0].aggregate.grouping_sets
    assert [[k.key for k in s] for s in cube] == [[k.key for k in s] for s in sets]
    rollup = build(base.format("ROLLUP (supplier_id)")).pipelines[0].aggregate.grouping_sets
    assert [[k.key for k in s] for s in rollup] == [["Bid.supplier_id"], []]


@pytest.mark.parametrize("sql, message", [
    ("", "empty"),
    ("-- only a comment\n", "no statements"),
    ("SELECT a FROM\nWHERE", "syntax error"),
    ("DROP TABLE x", "unsupported statement DROP"),
    ("SELECT a FROM t UNION ALL SELECT a FROM u", "only SELECT"),
    (tvf("a, sum(b)", size="INTERVAL 'x' MINUTE"), "cannot read interval"),
    (legacy("a, SUM(b)", window="TUMBLE(ts, INTERVAL '1' FORTNIGHT)"), "interval unit"),
    (legacy("a, SUM(b)", window="HOP(ts, INTERVAL '1' MINUTE)"), "HOP takes 2 to 3 interval"),
    ("SELECT TUMBLE_START(ts, INTERVAL '1' MINUTE) FROM t GROUP BY a", "matching group window"),
    (topn(where="rk > 3"), "without an upper bound"),
    (tvf("a, SUM(b)", group="a, window_start, window_end GROUPING SETS ((a))"), "after a comma"),
    (tvf("a, SUM(b)", group="a, window_start, window_end,"), "item is missing"),
    ("CREATE TEMPORARY VIEW V", "needs AS SELECT"),
    ("INSERT INTO Sink", "has no query"),
    (BID_DDL.replace("WATERMARK FOR bidtime", "WATERMARK FOR nope"), "no such column"),
    (BID_DDL.replace("WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND",
                     "WATERMARK FOR bidtime AS bidtime, WATERMARK FOR bidtime AS bidtime"), "second WATERMARK"),
])
def test_bad_input_is_a_located_error(sql: str, message: str) -> None:
    with pytest.raises(SQLModelError) as caught:
        build(sql, source="job.sql")
    assert message in str(caught.value)
    assert str(caught.value).startswith("job.sql")


def test_syntax_errors_name_line_and_column() -> None:
    with pytest.raises(SQLModelError) as caught:
        build("SET 'a' = 'b';\n\nSELECT (a FROM t", source="job.sql")
    assert (caught.value.line, caught.value.source) == (3, "job.sql")
    assert caught.value.col is not None


def test_a_script_without_a_window_is_unknown() -> None:
    report = compare("SELECT a, b FROM t", "SELECT a, b, c FROM t")
    assert report.verdict is Verdict.UNKNOWN
    assert report.findings[0].rule == "stategate.no-window-aggregation"
    assert "stateless" not in report.findings[0].message


DEDUP = ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC) AS rn FROM t) "
         "WHERE rn = 1")


def test_identical_sql_is_full_whatever_state_the_query_keeps() -> None:
    moved = "-- the same query, two lines down\n\n" + DEDUP
    report = compare(DEDUP, moved)
    assert report.verdict is Verdict.FULL and report.findings[0].rule == "stategate.unchanged"
    assert "stateless" not in report.to_text()
    # The same text reading a changed view is a change.
    view = "CREATE VIEW t AS SELECT a, ts FROM src{};\n" + DEDUP
    assert compare(view.format(""), view.format(" WHERE a > 1")).verdict is Verdict.UNKNOWN


@pytest.mark.parametrize("make", [tvf, legacy], ids=["tvf", "legacy"])
def test_an_expression_over_an_aggregate_is_said_to_change_and_a_bare_aggregate_is_left_to_its_rules(make) -> None:
    """The SELECT list after the window is computed on emit: ``COUNT(*)`` turned into
    ``COUNT(*) + 1`` is FULL and says so; a LISTAGG's separator changed is that aggregate's change
    alone (Flink's LISTAGG, a plain call to sqlglot, is an aggregate as SUM is)."""
    report = compare(make("a, COUNT(*) AS n, LISTAGG(a, ';') AS l"), make("a, COUNT(*) + 1 AS n, LISTAGG(a, ';') AS l"))
    assert report.verdict is Verdict.FULL
    assert [f.rule for f in report.findings] == ["stategate.output-expression"]
    report = compare(make("a, COUNT(*) AS n, LISTAGG(a, ';') AS l"), make("a, COUNT(*) AS n, LISTAGG(a, '|') AS l"))
    assert report.verdict is Verdict.PARTIAL
    assert "stategate.output-expression" not in [f.rule for f in report.findings]
    assert report.aggregates.added == ("LISTAGG(MyTable.a, '|')",)


def test_findings_of_a_job_with_several_pipelines_name_their_pipeline() -> None:
    query = ("INSERT INTO {sink} SELECT a, SUM(b) FROM MyTable "
             "GROUP BY a, TUMBLE(ts, INTERVAL '{size}' MINUTE);\n")
    old = query.format(sink="Totals", size=1) + query.format(sink="Hourly", size=60)
    new = query.format(sink="Totals", size=1) + query.format(sink="Hourly", size=30)
    report = compare(old, new)
    changed = next(line for line in report.to_text().splitlines() if line.startswith("INCOMPATIBLE"))
    assert "Hourly" in changed and "Totals" not in changed
    assert "PIPELINE" in report.to_text() and "| Hourly |" in report.to_markdown()
    # State is cleared as a whole: no aggregate is listed as both added and dropped.
    assert "added (start from zero)" not in report.to_text()
    assert "all state is cleared (archived first)" in report.to_text()
    assert "every aggregate starts from zero" in report.to_markdown()


def test_a_qualified_star_over_a_join_reads_its_own_relation() -> None:
    """The Nexmark q9 shape: ``A.*`` beside ``B.ts`` is not ambiguous, though both have a ts."""
    sql = ("CREATE TABLE A (id BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem');\n"
           "CREATE TABLE B (auction BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem');\n"
           "SELECT A.*, B.ts AS bts FROM A, B WHERE A.id = B.auction;")
    outputs = build(sql).pipelines[0].outputs
    assert [(o.name, o.value.key) for o in outputs] == [("id", "A.id"), ("ts", "A.ts"), ("bts", "B.ts")]
    with pytest.raises(SQLModelError, match="column 'ts' is ambiguous"):
        build(sql.replace("A.*, B.ts AS bts", "ts"))


@pytest.mark.parametrize("old, new", [
    ("COUNT(*)", "COUNT(1)"),
    ("INTERVAL '4' SECOND", "INTERVAL '4000' MILLISECOND"),
])
def test_the_same_state_spelled_differently_is_full(old: str, new: str) -> None:
    sql = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2),\n"
           "  WATERMARK FOR bidtime AS bidtime - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem');\n"
           "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTE))\n"
           "GROUP BY window_start, window_end;")
    report = compare(sql, sql.replace(old, new))
    assert report.verdict is Verdict.FULL, report.to_text()


SINKS = ("CREATE TABLE T1 (a STRING, s BIGINT) WITH ('connector' = 'blackhole');\n"
         "CREATE TABLE T2 (a STRING, m BIGINT) WITH ('connector' = 'blackhole');\n")
INSERTS = ("INSERT INTO T1 " + tvf("a, sum(b) AS s") + "\n"
           "INSERT INTO T2 " + tvf("a, max(c) AS m") + "\n")


@pytest.mark.parametrize("wrapped", [
    f"EXECUTE STATEMENT SET BEGIN\n{INSERTS}END;",
    f"BEGIN STATEMENT SET;\n{INSERTS}END;",
])
def test_a_statement_set_is_its_inserts(wrapped: str) -> None:
    """Flink's multi-sink jobs: the wrapper holds no state, each INSERT is a pipeline."""
    plain, inside = build(SINKS + INSERTS), build(SINKS + wrapped)
    assert [p.sink for p in inside.pipelines] == ["T1", "T2"]
    assert [p.aggregate for p in inside.pipelines] == [p.aggregate for p in plain.pipelines]
    assert compare(SINKS + INSERTS, SINKS + wrapped).verdict is Verdict.FULL
    changed = compare(SINKS + wrapped, SINKS + wrapped.replace("max(c) AS m", "max(c) AS m, count(*) AS n"))
    assert changed.verdict is Verdict.PARTIAL


@pytest.mark.parametrize("script, message, at", [
    (f"BEGIN STATEMENT SET;\n{INSERTS}", "the statement set is not closed with END;", "BEGIN"),
    (f"{INSERTS}END;", "END without BEGIN STATEMENT SET", "END"),
    ("BEGIN STATEMENT SET;\nSET 'a' = 'b';\nEND;", "only INSERT INTO statements may stand in a statement set, not SET",
     "SET 'a'"),
    ("BEGIN STATEMENT SET;\nBEGIN STATEMENT SET;\nEND;", "a statement set inside a statement set", "BEGIN STATEMENT SET;\nEND"),
])
def test_a_broken_statement_set_is_a_located_error(script: str, message: str, at: str) -> None:
    script = SINKS + script
    with pytest.raises(SQLModelError, match=message) as error:
        build(script, source="job.sql")
    assert str(error.value).startswith(f"job.sql:{script[:script.index(at)].count(chr(10)) + 1}:")


@pytest.mark.parametrize("call, identity", [("LISTAGG(a)", "LISTAGG(MyTable.a)"),
                                            ("LISTAGG(a, ';')", "LISTAGG(MyTable.a, ';')"),
                                            ("COLLECT(a)", "COLLECT(MyTable.a)"),
                                            ("JSON_ARRAYAGG(a)", "JSON_ARRAYAGG(MyTable.a)")])
def test_flinks_aggregates_written_as_plain_calls_are_aggregates_even_over_a_group_key(call: str,
                                                                                      identity: str) -> None:
    """sqlglot has no node for LISTAGG, COLLECT or JSON_ARRAYAGG. Over a group key such a call
    still aggregates the window's rows, as Flink runs it: added, it starts from zero (PARTIAL), never
    a UDAF nobody can judge (UNKNOWN), never a grouped expression the analyzer would not see at all."""
    report = compare(BASE, tvf(f"a, sum(b) AS total, max(c) AS biggest, {call} AS listed"))
    assert report.verdict is Verdict.PARTIAL, report.findings
    assert report.aggregates.added == (identity,)


def test_a_user_function_named_like_a_flink_aggregate_stays_user_defined() -> None:
    declared = "CREATE FUNCTION LISTAGG AS 'com.example.MyListAgg' LANGUAGE JAVA;\n"
    report = compare(declared + BASE, declared + tvf("a, sum(b) AS total, max(c) AS biggest, LISTAGG(c) AS listed"))
    assert report.verdict is Verdict.UNKNOWN
    assert any(f.rule.endswith(".udaf") for f in report.findings), report.findings


@pytest.mark.parametrize("key", ["UPPER(tag(a))", "tag(a) || '-'", "CAST(tag(a, 2) AS VARCHAR(3))"])
def test_a_user_function_inside_a_group_key_is_part_of_the_key(key: str) -> None:
    """A key computed with a user's function is one value per group: the function is scalar there,
    not an aggregate of the window's rows (which nobody could judge, UNKNOWN)."""
    sql = tvf(f"{key} AS k, sum(b) AS total", group=f"{key}, window_start, window_end")
    assert aggregates_of(sql) == ["SUM(MyTable.b)"]
    report = compare(sql, tvf(f"{key} AS k, sum(b) AS total, max(c) AS biggest",
                              group=f"{key}, window_start, window_end"))
    assert report.verdict is Verdict.PARTIAL, report.findings

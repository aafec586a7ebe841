"""What the Spark job cannot run is known from the job model alone, before anything runs: the
deploy gate and ``stategate check`` refuse it with the job's own message, at the construct's place.

``REFUSED`` is every construct the job refuses; ``tests/spark_jobs/test_unsupported.py`` runs the
same list through the real job, where each stops at compile time before anything is written.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stategate.analyzer import SQLModelError, build
from stategate.analyzer.runnable import check_pipeline, check_runnable

WINDOW = "TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))"
DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING,\n"
       "  pt AS PROCTIME(), WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND\n"
       ") WITH ('connector' = 'filesystem', 'path' = '/data/bids', 'format' = 'csv');\n")
#: What only Spark's own types tell: the job checks it when it compiles.
SPARK_TYPES = "MAX(SOUNDEX(item)): its argument is string on Spark"

#: What the job says of a window attribute read before the row has its window.
WINDOW_FIELD_READ = ("reads {field}, which Spark gives a row only inside the window aggregation, after what the row "
                     "brings to it is computed")

#: A view of per-supplier windows, which an aggregation of whole windows reads.
PER_SUPPLIER = (f"CREATE VIEW PerSupplier AS SELECT supplier_id, window_start, window_end, COUNT(*) AS c FROM {WINDOW} "
                "GROUP BY supplier_id, window_start, window_end;\n")

REFUSED = [
    ("SELECT item, COUNT(*) FROM Bid GROUP BY item", "GROUP BY without a window"),
    (PER_SUPPLIER + "SELECT window_start, window_end, STDDEV_POP(c) FROM PerSupplier GROUP BY window_start, window_end",
     "STDDEV_POP(c): over whole windows of another window aggregation the engine runs AVG, COUNT, MAX, MIN, SUM"),
    (PER_SUPPLIER + "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY t DESC) "
     "AS rownum FROM (SELECT window_start, window_end, SUM(c) AS t FROM PerSupplier GROUP BY window_start, window_end)) "
     "WHERE rownum <= 1", "a window Top-N over an aggregation of whole windows"),
    ("SELECT item, price FROM Bid", "no window aggregation"),
    # The job reads an upstream aggregation's windows from its state, before a HAVING would drop any.
    (PER_SUPPLIER.replace("supplier_id, window_start, window_end;", "supplier_id, window_start, window_end "
                          "HAVING COUNT(*) > 2;") + "SELECT window_start, window_end, SUM(c) FROM PerSupplier "
     "GROUP BY window_start, window_end",
     "HAVING COUNT(*) > 2 in an aggregation another one reads is not supported on Spark"),
    # Flink 2.3 plans these as a GroupAggregate over the TVF's rows: updating, never expiring.
    (f"SELECT window_start, COUNT(*) FROM {WINDOW} GROUP BY window_start",
     "a GROUP BY of a window TVF without window_end is not supported: Flink runs it as an updating aggregation"),
    (f"SELECT window_time, item, COUNT(*) FROM {WINDOW} GROUP BY window_time, item",
     "a GROUP BY of a window TVF without window_start and window_end is not supported"),
    # A SELECT DISTINCT is the GROUP BY of its items, as Flink plans it; with an aggregate or `*`, none.
    (f"SELECT DISTINCT item, window_start FROM {WINDOW}",
     "a GROUP BY of a window TVF without window_end is not supported: Flink runs it as an updating aggregation"),
    (f"SELECT DISTINCT * FROM {WINDOW}", "not supported on Spark: SELECT DISTINCT"),
    (f"SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bidtime) AS rownum "
     f"FROM {WINDOW}) WHERE rownum <= 1",
     "a window Top-N over a window TVF's rows (a window deduplication among them) is not supported on Spark: "
     "rank the rows of a window aggregation"),
    (f"SELECT window_start, MEDIAN(price) FROM {WINDOW} GROUP BY window_start, window_end",
     "is not supported (supported: COUNT, SUM, MIN, MAX, AVG, STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP, FIRST_VALUE, "
     "LAST_VALUE, LISTAGG, ARRAY_AGG, COLLECT, JSON_ARRAYAGG, JSON_OBJECTAGG, APPROX_COUNT_DISTINCT)"),
    (f"SELECT window_start, APPROX_COUNT_DISTINCT(item, 1.0) FROM {WINDOW} GROUP BY window_start, window_end",
     "its accuracy must be a number between 0 and 1 (exclusive), as VVR requires"),
    (f"SELECT window_start, APPROX_COUNT_DISTINCT(DISTINCT item) FROM {WINDOW} GROUP BY window_start, window_end",
     "DISTINCT is not supported for APPROX_COUNT_DISTINCT"),
    (f"SELECT window_start, JSON_OBJECTAGG(KEY price VALUE item) FROM {WINDOW} GROUP BY window_start, window_end",
     "its key must be text (STRING), as Flink requires"),
    # A CAST to a text of a time or a BOOLEAN is written as Flink writes it, cut to a length it
    # has; of a time finer than Spark keeps, it is refused.
    (f"SELECT window_start, LISTAGG(CAST(CAST(bidtime AS TIMESTAMP(9)) AS STRING)) FROM {WINDOW} "
     "GROUP BY window_start, window_end",
     "Flink writes every digit of a second a time's type has (nine of a TIMESTAMP(9)) and Spark keeps "
     "microseconds: write DATE_FORMAT(t, 'yyyy-MM-dd HH:mm:ss.SSSSSS')"),
    (f"SELECT window_start, LISTAGG(CAST(CAST(bidtime AS TIMESTAMP(7)) AS VARCHAR(12))) FROM {WINDOW} "
     "GROUP BY window_start, window_end", "Flink writes every digit of a second a time's type has"),
    (f"SELECT window_start, CAST(ARRAY_AGG(price) AS STRING) FROM {WINDOW} GROUP BY window_start, window_end",
     "Flink writes an ARRAY as text with NULL in capitals ([1, NULL]), a MULTISET in its hash map's order"),
    (f"SELECT window_start, CAST(COLLECT(item) AS STRING) FROM {WINDOW} GROUP BY window_start, window_end",
     "Flink writes an ARRAY as text with NULL in capitals ([1, NULL]), a MULTISET in its hash map's order"),
    (f"SELECT window_start, LISTAGG(item, item) FROM {WINDOW} GROUP BY window_start, window_end",
     "its separator must be a string literal"),
    (f"SELECT window_start, LISTAGG(item, ';', '!') FROM {WINDOW} GROUP BY window_start, window_end",
     "takes 2 argument(s) here"),
    (f"SELECT window_start, LISTAGG(price) FROM {WINDOW} GROUP BY window_start, window_end",
     "LISTAGG over an exact number is not supported"),
    (f"SELECT window_start, FIRST_VALUE(price) RESPECT NULLS FROM {WINDOW} GROUP BY window_start, window_end",
     "RESPECT NULLS is not supported"),
    (f"SELECT window_start, LAST_VALUE(price) IGNORE NULLS FROM {WINDOW} GROUP BY window_start, window_end",
     "IGNORE NULLS is not supported"),
    # Flink's signatures: a BOOLEAN is no number, and a MIN or MAX compares no ARRAY, MAP, ROW,
    # INTERVAL or BYTES.
    *((f"SELECT window_start, {call} FROM {WINDOW} GROUP BY window_start, window_end", message) for call, message in (
        ("SUM(price > 10)", "Flink's SUM takes numbers, no BOOLEAN"),
        ("AVG(DISTINCT price > 10)", "Flink's AVG takes numbers, no BOOLEAN"),
        ("STDDEV_POP(price > 10)", "Flink's STDDEV_POP takes numbers, no BOOLEAN"),
        ("SUM(INTERVAL '1' DAY)", "Flink's SUM takes numbers, no INTERVAL"),
        ("MAX(ARRAY[price])", "Flink's MAX takes numbers, BOOLEAN, text and times, no ARRAY<DECIMAL(10, 2)>"),
        ("MIN(CAST(item AS BYTES))", "Flink's MIN takes numbers, BOOLEAN, text and times, no BYTES"),
        ("LISTAGG(ARRAY[item])", "Flink's LISTAGG takes text, no ARRAY"),
        ("COUNT(DISTINCT *)", "DISTINCT * is a syntax error in Flink"))),
    # What sqlglot reads and Flink 2.3 does not take as written: sqlglot leaves the IGNORE NULLS on
    # the value, and Flink keeps arrival order whatever the ORDER BY says.
    *((f"SELECT window_start, ARRAY_AGG(price {nulls} NULLS) FILTER (WHERE price > 10) FROM {WINDOW} "
       "GROUP BY window_start, window_end",
       "Flink refuses a FILTER on an aggregate with IGNORE NULLS or RESPECT NULLS") for nulls in ("IGNORE", "RESPECT")),
    *((f"SELECT window_start, {call} FROM {WINDOW} GROUP BY window_start, window_end",
       "Flink takes an ORDER BY inside the call only in ARRAY_AGG and JSON_ARRAYAGG, and ignores it there")
      for call in ("ARRAY_AGG(price ORDER BY bidtime DESC)", "ARRAY_AGG(DISTINCT price ORDER BY price)",
                   "COUNT(price ORDER BY bidtime)", "LISTAGG(item ORDER BY price)",
                   "JSON_ARRAYAGG(item ORDER BY price DESC NULL ON NULL)")),
    (f"SELECT window_start, JSON_ARRAYAGG(CAST(price AS DOUBLE)) FROM {WINDOW} GROUP BY window_start, window_end",
     "JSON_ARRAYAGG over a floating-point number is not supported"),
    (f"SELECT window_start, JSON_ARRAYAGG(bidtime) FROM {WINDOW} GROUP BY window_start, window_end",
     "JSON_ARRAYAGG over a time is not supported"),
    ("CREATE VIEW tenth AS SELECT window_time AS t, SUM(price) AS total FROM "
     f"{WINDOW} GROUP BY window_start, window_end, window_time;\nSELECT window_start, FIRST_VALUE(total) FROM "
     "TABLE(TUMBLE(TABLE tenth, DESCRIPTOR(t), INTERVAL '1' HOUR)) GROUP BY window_start, window_end",
     "follows the order rows arrive in, and the windows of the aggregation it reads arrive in no order"),
    (f"SELECT window_start, weighted_avg(price, price) FROM {WINDOW} GROUP BY window_start, window_end",
     "user-defined aggregate"),
    # Past 38 digits a COALESCE keeps its scale on Spark and its whole digits on Flink.
    (f"SELECT window_start, STDDEV_POP(COALESCE(CAST(price AS DECIMAL(38, 0)), price)) FROM {WINDOW} "
     "GROUP BY window_start, window_end", "the scale of its argument cannot be told"),
    # Not a Flink function, so the analyzer cannot tell it yields text; Spark's type decides the
    # buffer field, and the two must agree.
    (f"SELECT window_start, MAX(SOUNDEX(item)) FROM {WINDOW} GROUP BY window_start, window_end", SPARK_TYPES),
    # A function Spark has not stops a job when it starts: the gate refuses it, wherever it is.
    (f"SELECT window_start, MAX(JSON_VALUE(item, '$.a')) FROM {WINDOW} GROUP BY window_start, window_end",
     "Spark has no function JSON_VALUE: the engine cannot run it"),
    (f"SELECT window_start, COUNT(*) FILTER (WHERE IS_DECIMAL(item)) FROM {WINDOW} GROUP BY window_start, window_end",
     "Spark has no function IS_DECIMAL: the engine cannot run it"),
    (f"SELECT window_start, COUNT(*) FROM {WINDOW} WHERE my_udf(item) > 0 GROUP BY window_start, window_end",
     "Spark has no function MY_UDF: the engine cannot run it"),
    ("CREATE FUNCTION tag AS 'com.example.Tag' LANGUAGE JAVA;\n"
     f"SELECT tag(item) AS k, window_start, COUNT(*) FROM {WINDOW} GROUP BY tag(item), window_start, window_end",
     "TAG is a user-defined function (CREATE FUNCTION), which the engine cannot run on Spark"),
    (f"SELECT UPPER(my_udf(item)) AS k, window_start, COUNT(*) FROM {WINDOW} "
     "GROUP BY UPPER(my_udf(item)), window_start, window_end", "Spark has no function MY_UDF: the engine cannot run it"),
    # Spark gives a row its window inside the aggregation: what the row brings to it cannot read it.
    (f"SELECT window_start, MAX(TIMESTAMPDIFF(SECOND, window_start, bidtime)) FROM {WINDOW} "
     "GROUP BY window_start, window_end", WINDOW_FIELD_READ.format(field="window_start")),
    (f"SELECT window_start, COUNT(*) FILTER (WHERE bidtime < window_end - INTERVAL '1' MINUTE) FROM {WINDOW} "
     "GROUP BY window_start, window_end", WINDOW_FIELD_READ.format(field="window_end")),
    (f"SELECT DATE_FORMAT(window_start, 'HH') AS h, window_start, COUNT(*) FROM {WINDOW} "
     "GROUP BY DATE_FORMAT(window_start, 'HH'), window_start, window_end", WINDOW_FIELD_READ.format(field="window_start")),
    (f"SELECT window_start, COUNT(*) FROM {WINDOW} WHERE CURRENT_WATERMARK(bidtime) IS NULL "
     "GROUP BY window_start, window_end", "Spark has no function CURRENT_WATERMARK: the engine cannot run it"),
    (f"SELECT window_start, MAX(WEEK(bidtime, 1)) FROM {WINDOW} GROUP BY window_start, window_end",
     "WEEK takes 1 argument(s)"),
    (f"SELECT window_start, MAX(TO_TIMESTAMP_LTZ(CHAR_LENGTH(item), 6)) FROM {WINDOW} GROUP BY window_start, window_end",
     "its precision must be 0 (seconds) or 3 (milliseconds), written as a number"),
    (f"SELECT window_start, MAX(TO_TIMESTAMP_LTZ(item)) FROM {WINDOW} GROUP BY window_start, window_end",
     "the engine runs TO_TIMESTAMP_LTZ of an integer epoch"),
    ("SELECT window_start, supplier_id, SUM(price) FROM TABLE(SESSION(TABLE Bid, DESCRIPTOR(bidtime), "
     "INTERVAL '2' MINUTES)) GROUP BY window_start, window_end, supplier_id", "PARTITION BY keys must be the GROUP BY"),
    # Flink 2.3 runs these as updating aggregations over a window for every row: none merges sessions.
    *((f"SELECT window_start, supplier_id, SUM(price) FROM TABLE(SESSION(TABLE Bid PARTITION BY supplier_id, "
       f"DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)) GROUP BY window_start, window_end, {sets}",
       "grouping set () has others") for sets in ("GROUPING SETS ((supplier_id), ())", "ROLLUP (supplier_id)",
                                                   "CUBE (supplier_id)")),
    ("SELECT window_start, supplier_id, item, SUM(price) FROM TABLE(SESSION(TABLE Bid PARTITION BY supplier_id, "
     "DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)) GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), "
     "(supplier_id, item))", "grouping set (supplier_id, item) has others"),
    ("SELECT window_start, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(item), INTERVAL '10' MINUTES)) "
     "GROUP BY window_start, window_end", "must be the rowtime column bidtime of Bid or a processing-time"),
    (f"SELECT window_start, SUM(price) FROM (SELECT * FROM {WINDOW}, LATERAL TABLE(split(item)) AS T(x)) "
     "GROUP BY window_start, window_end", "LATERAL TABLE(split)"),
    ("SET 'table.exec.emit.early-fire.enabled' = 'true';\n"
     f"SELECT window_start, SUM(price) FROM {WINDOW} GROUP BY window_start, window_end", "early-fire"),
    (f"SELECT window_start, SUM(price) FROM {WINDOW.replace('Bid', 'Nope')} GROUP BY window_start, window_end",
     "not declared with CREATE TABLE"),
    (f"SELECT a.window_start, SUM(a.price) FROM {WINDOW} AS a JOIN Bid b ON a.item = b.item "
     "GROUP BY a.window_start, a.window_end", "not supported on Spark: a join other than a window join"),
    ("CREATE VIEW hourly AS SELECT window_time AS t, SUM(price) AS total FROM TABLE(HOP(TABLE Bid, "
     "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '60' MINUTES)) GROUP BY window_start, window_end, "
     "window_time;\nSELECT window_start, MAX(total) FROM TABLE(TUMBLE(TABLE hourly, DESCRIPTOR(t), "
     "INTERVAL '1' HOUR)) GROUP BY window_start, window_end", "a window over the results of a HOP window"),
]


@pytest.mark.parametrize("sql, message", [case for case in REFUSED if case[1] != SPARK_TYPES])
def test_every_refusal_of_the_job_is_decided_from_the_model(sql: str, message: str) -> None:
    model = build(DDL + sql, source="job.sql")
    with pytest.raises(SQLModelError) as caught:
        check_pipeline(model, model.pipelines[0])
    assert message in str(caught.value) and str(caught.value).startswith("job.sql:")


def test_an_aggregate_is_refused_at_its_line_and_column() -> None:
    sql = DDL + f"SELECT window_start,\n       SUM(price),\n       MEDIAN(price)\nFROM {WINDOW}\n" \
                "GROUP BY window_start, window_end"
    with pytest.raises(SQLModelError, match=r"^job\.sql:6:8: aggregate MEDIAN\(price\) is not supported"):
        check_pipeline(build(sql, source="job.sql"), build(sql).pipelines[0])


def test_null_treatment_after_a_filter_is_a_syntax_error_at_its_place() -> None:
    """Flink's parser stops at it; sqlglot reads it around the FILTER, where the aggregate would lose it."""
    sql = DDL + f"SELECT window_start,\n  ARRAY_AGG(price) FILTER (WHERE price > 10) IGNORE NULLS\nFROM {WINDOW}\n" \
                "GROUP BY window_start, window_end"
    with pytest.raises(SQLModelError, match=r"^job\.sql:5:3: ARRAY_AGG\(price\) FILTER\(WHERE price > 10\) IGNORE "
                                            "NULLS: IGNORE NULLS or RESPECT NULLS after FILTER is a syntax error"):
        build(sql, source="job.sql")


@pytest.mark.parametrize("sink, message", [
    ("", "a bare SELECT has no sink: a deployed job writes with INSERT INTO"),
    ("INSERT INTO Out ", "INSERT INTO Out: the sink table is not declared"),
    ("CREATE TABLE Out (ws TIMESTAMP(3)) WITH ('connector' = 'print');\nINSERT INTO Out ",
     "INSERT INTO Out: the query has 2 columns, the table 1"),
    ("CREATE TABLE Out (ws TIMESTAMP(3), total DECIMAL(38, 2)) WITH ('connector' = 'jdbc');\nINSERT INTO Out ",
     "table Out: connector 'jdbc' is not supported (use filesystem, print or kafka)"),
    ("CREATE TABLE Out (ws TIMESTAMP(3), total DECIMAL(38, 2)) WITH ('connector' = 'filesystem', 'format' = 'csv')"
     ";\nINSERT INTO Out ", "table Out needs the option 'path'"),
    ("SET 'spark.sql.session.timeZone' = 'Europe/Paris';\nCREATE TABLE Out (ws TIMESTAMP(3), total DECIMAL(38, 2)) "
     "WITH ('connector' = 'print');\nINSERT INTO Out ", "stategate runs every job with spark.sql.session.timeZone = UTC"),
])
def test_a_deployed_job_needs_a_sink_the_engine_writes(sink: str, message: str) -> None:
    sql = DDL + sink + f"SELECT window_start, SUM(price) FROM {WINDOW} GROUP BY window_start, window_end"
    with pytest.raises(SQLModelError, match="^job.sql:") as caught:
        check_runnable(build(sql, source="job.sql"))
    assert message in str(caught.value)


def test_a_job_the_engine_runs_passes() -> None:
    sink = "CREATE TABLE Out (ws TIMESTAMP(3), total DECIMAL(38, 2)) WITH ('connector' = 'print');\n"
    check_runnable(build(DDL + sink + f"INSERT INTO Out SELECT window_start, SUM(price) FROM {WINDOW} "
                                      "GROUP BY window_start, window_end"))


def test_the_judgement_and_the_checkpoint_need_neither_pyspark_nor_airflow() -> None:
    """What the gate and ``stategate check`` import to judge a change and read a checkpoint."""
    modules = ("stategate.analyzer.cli", "stategate.analyzer.judgement", "stategate.analyzer.runnable",
               "stategate.spark_jobs.checkpoint", "stategate.spark_jobs.cutover")
    probe = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
             + "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j', 'airflow'}))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("flink, spark", [("ARRAY<DECIMAL(10, 2)>", "ARRAY<DECIMAL(10, 2)>"),
                                          ("MULTISET<INT>", "MAP<INT, INT>"),
                                          ("MULTISET<DECIMAL(10, 2)>", "MAP<DECIMAL(10, 2), INT>"),
                                          ("ARRAY<VARCHAR(20)>", "ARRAY<STRING>")])
def test_sink_columns_of_array_agg_and_collect_take_their_spark_types(flink: str, spark: str) -> None:
    """ARRAY_AGG writes an ARRAY of its argument's type, COLLECT Flink's MULTISET: on Spark a map
    from each value to how often it came. The sink column as a job declares it."""
    from stategate.analyzer.runnable import spark_type

    [column] = build(f"CREATE TABLE Out (c {flink}) WITH ('connector' = 'blackhole');").tables["Out"].columns
    assert spark_type(column.type, "c", "Out") == spark

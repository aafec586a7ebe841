"""The gate's judgement of a job's function calls is Spark's own: a call it passes, Spark runs as the
engine writes it; a call it refuses, Spark cannot run. Both against the running Spark, so an upgrade
of Spark or sqlglot that changes either side shows here."""

from __future__ import annotations

import re
from decimal import Decimal
from datetime import datetime

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, ParseException
from sqlglot import exp

from stategate.analyzer import build
from stategate.analyzer.functions import SPARK_FUNCTIONS, SPARK_GRAMMAR, spark_lacks
from stategate.analyzer.model import sql_key
from stategate.analyzer.value_types import Typing
from stategate.spark_jobs.expressions import to_column
from tests.analyzer.test_runnable import DDL, WINDOW

#: Calls of Flink's functions (and of others) over the test table's columns, each in a FILTER.
CALLS = (
    "UPPER(item)", "INITCAP(item)", "SPLIT_INDEX(item, ',', 1)", "SPLIT_INDEX(item, CHAR_LENGTH(item), 0)",
    "WEEK(bidtime)", "IS_DIGIT(item)", "IS_ALPHA(item)", "IS_DECIMAL(item)", "JSON_VALUE(item, '$.a')",
    "JSON_QUERY(item, '$.a')", "JSON_EXISTS(item, '$.a')", "JSON_OBJECT(KEY 'a' VALUE item)", "JSON_QUOTE(item)",
    "DATE_FORMAT(bidtime, 'yyyy')", "FROM_UNIXTIME(CHAR_LENGTH(item))", "UNIX_TIMESTAMP(item)", "TO_DATE(item)",
    "TO_TIMESTAMP(item)", "TO_TIMESTAMP_LTZ(CHAR_LENGTH(item), 3)", "TO_TIMESTAMP_LTZ(CHAR_LENGTH(item))",
    "TO_TIMESTAMP_LTZ(CHAR_LENGTH(item), 0)", "TO_TIMESTAMP_LTZ(item)", "CONVERT_TZ(item, 'UTC', 'UTC')",
    "CARDINALITY(ARRAY[item])", "ELEMENT(ARRAY[item])", "SHA256(item)", "SHA2(item, 256)", "MD5(item)",
    "RAND_INTEGER(10)", "CURRENT_WATERMARK(bidtime)", "BTRIM(item)", "PRINTF('%s', item)", "URL_ENCODE(item)",
    "BIN(CHAR_LENGTH(item))", "E()", "NOW()", "LOG2(price)", "OCTET_LENGTH(item)", "my_udf(item)",
    "REGEXP(item, 'a')", "POSITION('a' IN item)", "OVERLAY(item PLACING 'x' FROM 1)", "TRY_CAST(item AS INT)",
    "TYPEOF(item)", "TIMESTAMPDIFF(MINUTE, bidtime, bidtime)", "FLOOR(bidtime TO HOUR)", "TRUNCATE(price, 1)",
    "REGEXP_EXTRACT(item, 'a(b)', 1)", "CONCAT_WS('-', item, supplier_id)", "LPAD(item, 3, '*')", "REPEAT(item, 2)",
    "LOCATE('a', item)", "CHR(65)", "ASCII(item)", "LEFT(item, 2)", "TO_BASE64(item)", "FROM_BASE64(item)",
    "STR_TO_MAP(item)", "PARSE_URL(item, 'HOST')", "URL_DECODE(item)", "ELT(1, item, supplier_id)",
    "TRANSLATE(item, 'a', 'b')", "REGEXP_SUBSTR(item, 'a')", "DAYOFWEEK(bidtime)", "QUARTER(bidtime)",
    "EXTRACT(DOW FROM bidtime)", "IFNULL(item, supplier_id)", "IF(item = 'a', 1, 2)", "GREATEST(item, supplier_id)",
    "UUID()", "CURRENT_TIMESTAMP", "SIGN(price)", "POWER(price, 2)", "ROUND(price, 1)",
)


def _filtered(call: str) -> tuple[exp.Expr, Typing]:
    """``call`` as the model of a job holds it (in an aggregate's FILTER), and its typing."""
    model = build(DDL + f"SELECT window_start, COUNT(*) FILTER (WHERE ({call}) IS NOT NULL) FROM {WINDOW} "
                        "GROUP BY window_start, window_end")
    aggregate = model.pipelines[0].aggregate.aggregates[0]
    assert aggregate.filter is not None
    return aggregate.filter.expr, Typing(model)


def test_the_gate_refuses_exactly_the_calls_spark_cannot_run(spark) -> None:
    rows = spark.createDataFrame(
        [(datetime(2020, 4, 15, 8, 0), Decimal("1.50"), "a,b", "s1")],
        "bidtime TIMESTAMP, price DECIMAL(10, 2), item STRING, supplier_id STRING")
    columns = {sql_key(exp.column(name, table="Bid")): name for name in rows.columns}
    disagree = []
    for call in CALLS:
        expr, typing = _filtered(call)
        refused = spark_lacks(expr, typing) is not None
        try:
            rows.select(to_column(expr, columns, typing, "f"))  # analysed here: what Spark can run
            ran = True
        except (AnalysisException, ParseException, Py4JJavaError):  # Py4JJavaError: Spark's internal error
            ran = False
        if refused == ran:
            disagree.append((call, "refused" if refused else "passed", "ran" if ran else "failed"))
    assert disagree == []


def test_every_function_spark_has_is_known(spark) -> None:
    """The recorded registry is the running Spark's (the names it calls, not its operators), and
    its grammar's own calls are none of them."""
    names = {row[0] for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect()
             if re.fullmatch(r"[a-z_][a-z0-9_]*", row[0])}
    assert names == SPARK_FUNCTIONS - SPARK_GRAMMAR
    assert not SPARK_GRAMMAR & names


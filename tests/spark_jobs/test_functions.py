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

from pyspark.sql import types as T

from stategate.analyzer import build
from stategate.analyzer.families import Family
from stategate.analyzer.functions import SPARK_FUNCTIONS, SPARK_GRAMMAR, spark_lacks
from stategate.analyzer.layout import value_of
from stategate.analyzer.model import sql_key
from stategate.analyzer.value_types import Typing, exact_type
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
    "UUID()", "CURRENT_TIMESTAMP", "SIGN(price)", "POWER(price, 2)", "ROUND(price, 1)", "GREATEST(price, 1, 2)",
    "LEAST(item)", "LN(price)", "LOG(price)", "LOG(2, price)", "LOG10(price)",
    "FLOOR(price)", "CEIL(CAST(price AS DOUBLE))", "TIMESTAMPADD(MINUTE, 1, bidtime)",
    "TIMESTAMPADD(DAY, CHAR_LENGTH(item), CAST(bidtime AS DATE))", "TIMESTAMPADD(HOUR, 1, CAST(bidtime AS DATE))",
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



#: Values whose type the gate derives itself (sqlglot keeps a DECIMAL of any digits over a DOUBLE,
#: and gives arithmetic its first operand's digits): arithmetic, a value that is one of its
#: operands, ABS, NULLIF, FLOOR, CEIL and SIGN, over a DECIMAL(10, 2), an INT, a BIGINT, a DECIMAL(30, 10)
#: and a DOUBLE.
TYPED = (
    "price * qty", "price / 3", "ROUND(price * qty, 1)", "CASE WHEN qty > 5 THEN price END",
    "CASE WHEN qty > 5 THEN price ELSE 0 END", "CASE WHEN qty > 5 THEN price ELSE 0.5 END",
    "CASE qty WHEN 1 THEN price WHEN 2 THEN price * 2 ELSE wide END", "CASE WHEN qty > 5 THEN price ELSE big END",
    "CASE WHEN qty > 5 THEN price ELSE score END", "COALESCE(price, 0)", "COALESCE(price, CAST(NULL AS DECIMAL(5, 3)))",
    "COALESCE(wide * 1000, price)", "COALESCE(price, 1e3)", "IF(qty > 5, price, NULL)", "IF(qty > 5, qty, big)",
    "NULLIF(price, 0)", "NULLIF(qty, price)", "ABS(price * qty)", "ABS(score)", "GREATEST(price, 0)",
    "LEAST(price, wide, qty)", "GREATEST(score, price)", "FLOOR(price)", "CEIL(price * qty)", "FLOOR(wide)",
    "FLOOR(qty)", "CEIL(score)", "FLOOR(CAST(score AS FLOAT))", "CASE WHEN qty > 5 THEN CAST(qty AS FLOAT) ELSE qty END",
    "SIGN(qty)", "SIGN(price)", "SIGN(score)", "SIGN(big) * 2",
)


def test_the_gate_types_a_value_as_spark_computes_it(spark) -> None:
    """A state field keeps an aggregate's argument in the type the gate gives it
    (``analyzer.layout``), so the two must agree, or the job refuses at its start what the gate
    passed (``MAX(CASE WHEN ... THEN price ELSE score END)`` did): where the gate tells a DECIMAL's
    digits, Spark computes the value in those digits, and it tells a floating-point, an integer or
    a DECIMAL value where Spark computes one."""
    ddl = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), qty INT, big BIGINT, wide DECIMAL(30, 10), "
           "score DOUBLE, item STRING, WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) "
           "WITH ('connector' = 'filesystem', 'path' = '/data/bids', 'format' = 'csv');\n")
    rows = spark.createDataFrame([], "price DECIMAL(10, 2), qty INT, big BIGINT, wide DECIMAL(30, 10), score DOUBLE")
    columns = {sql_key(exp.column(name, table="Bid")): name for name in rows.columns}
    disagree = []
    for value in TYPED:
        model = build(ddl + f"SELECT window_start, MAX({value}) FROM {WINDOW} GROUP BY window_start, window_end")
        argument = value_of(model.pipelines[0].aggregate.aggregates[0])
        typing = Typing(model)
        spark_type = rows.select(to_column(argument, columns, typing, "v")).schema["v"].dataType
        exact = exact_type(model, argument)
        told = typing.family(argument), f"decimal({exact[0]},{exact[1]})" if exact else None
        found = _FAMILIES[type(spark_type)], spark_type.simpleString() if isinstance(spark_type, T.DecimalType) else None
        if told != found and (told[0], None) != found:  # an integer's digits are its type's
            disagree.append((value, told, found))
    assert disagree == []


_FAMILIES = {T.DecimalType: Family.EXACT, T.IntegerType: Family.EXACT, T.LongType: Family.EXACT,
             T.DoubleType: Family.FLOATING, T.FloatType: Family.FLOATING}

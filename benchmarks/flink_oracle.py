"""Flink's own answers to window aggregation queries, recorded as a test fixture.

Runs each query of an aggregate family through PyFlink (streaming mode, a bounded filesystem source
with the job's watermark) on random bids with NULLs, and writes the input, the queries and Flink's
rows to ``tests/data/flink/<family>.json``. ``tests/spark_jobs/test_flink_equality.py`` runs the same
queries through stategate and compares row for row, so ``make test`` needs no Flink. PyFlink is an
oracle, never a dependency: it lives in a venv of its own::

    python3 -m venv .flink && .flink/bin/pip install 'apache-flink==2.3.0'
    .flink/bin/python benchmarks/flink_oracle.py variance      # rewrites tests/data/flink/variance.json

Flink emits every window at the end of its bounded input; a Spark job emits a window once its
watermark passes it. The input ends with a bid far in the future (:data:`CLOSER`), so both engines
close every window of the other bids, and the fixture keeps only those.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "flink"
COLUMNS = "bidtime TIMESTAMP(3), price DECIMAL(10, 2), qty INT, score DOUBLE, supplier_id STRING"
#: The last bid: its watermark closes every window of the others.
CLOSER = "2020-04-16 00:00:00.000,0.00,0,0.0,closer"
WINDOWS = {
    "tumble": "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)",
    "hop": "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)",
    "cumulate": "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)",
    "session": "SESSION(TABLE Bid PARTITION BY supplier_id, DESCRIPTOR(bidtime), INTERVAL '3' MINUTES)",
}
#: Per family, the aggregate calls each query computes (over every window kind; ``{c}`` is each
#: column the family aggregates), how its values compare, and those columns. ``exact``, or
#: ``double``: Flink computes the family in DOUBLE whatever the argument's type, so its last bit
#: depends on the order rows and slices arrive in, and the cast to the result's type (an INT, a
#: DECIMAL(38, 6)) can turn that into one unit of the result's last digit. Flink 2.3 computes STDDEV
#: and VARIANCE with Welford's algorithm: over one HOP window whose exact VAR_SAMP of INTs is 582,
#: it says 581. ``floating``: both engines compute in DOUBLE, Flink its running mean and stategate
#: sums (a DECIMAL too wide for exact squares), compared as DOUBLEs. ``sets``: exact, a list held to
#: the same values in any order. ``ordered`` follows
#: arrival order: LISTAGG over DOUBLE text is left out, as Flink and Spark write a DOUBLE as text
#: differently.
FAMILIES = {
    # (Flink 2.3 itself refuses SUM(DISTINCT) over HOP windows: "This function does not support
    # retraction".)
    "basic": (("COUNT(*) FILTER (WHERE {c} IS NOT NULL)", "COUNT({c})", "SUM({c})", "MIN({c})", "MAX({c})",
               "AVG({c})", "SUM({c}) FILTER (WHERE qty > 40)", "COUNT(DISTINCT {c})", "MAX(DISTINCT {c})"),
              "exact", ("price", "qty", "score")),
    "variance": (("STDDEV_POP({c})", "STDDEV_SAMP({c})", "VAR_POP({c})", "VAR_SAMP({c})", "VARIANCE({c})",
                  "STDDEV_POP({c}) FILTER (WHERE qty > 40)", "VAR_SAMP(DISTINCT {c})"), "double",
                 ("price", "qty", "score")),
    "ordered": (("FIRST_VALUE({c})", "LAST_VALUE({c})", "FIRST_VALUE({c}) FILTER (WHERE qty > 40)",
                 "LISTAGG(CAST({c} AS STRING))", "LISTAGG(CAST({c} AS STRING), ';') FILTER (WHERE qty > 40)",
                 "LISTAGG(supplier_id, '|')", "LAST_VALUE(DISTINCT {c})",
                 "LAST_VALUE(DISTINCT MOD(qty, 4)) FILTER (WHERE price > 100)"), "exact", ("price", "qty")),
    # LISTAGG's separator where a FILTER drops rows: recorded on sparse bids, where Flink's default
    # two-phase aggregation would join some slices with "," (see run_flink).
    "separators": (("LISTAGG(CAST({c} AS STRING), ';') FILTER (WHERE qty > 40)",
                    "LISTAGG(CAST({c} AS STRING), ' | ') FILTER (WHERE price > 100)",
                    "LISTAGG(supplier_id, ';') FILTER (WHERE qty > 40)"), "exact", ("price", "qty")),
    "arrays": (("ARRAY_AGG({c})", "ARRAY_AGG({c}) FILTER (WHERE qty > 40)", "ARRAY_AGG({c} IGNORE NULLS)",
                "ARRAY_AGG(supplier_id)", "ARRAY_AGG(bidtime)", "ARRAY_AGG(qty > 40)",
                "ARRAY_AGG(CAST(qty AS BIGINT)) FILTER (WHERE price > 100)", "ARRAY_AGG(CAST(bidtime AS DATE))",
                "ARRAY_AGG(CAST(price AS DECIMAL(5, 1)) IGNORE NULLS)"),
               "exact", ("price", "qty")),
    # (Flink 2.3 cannot hand a MULTISET of times or dates to Python: "couldn't introspect javabean".)
    "multisets": (("COLLECT({c})", "COLLECT({c}) FILTER (WHERE qty > 40)", "COLLECT(score)", "COLLECT(qty > 40)",
                   "COLLECT(CAST(price AS DECIMAL(5, 1)))"), "exact", ("price", "qty")),
    # (Flink's parser takes no FILTER after JSON_ARRAYAGG or JSON_OBJECTAGG.)
    "json": (("JSON_ARRAYAGG({c})", "JSON_ARRAYAGG({c} NULL ON NULL)"), "exact", ("price", "qty", "supplier_id")),
    # Keyed by the bid's time, which no two bids of a supplier share: Flink fails a window that
    # holds a key twice. (A key that is the value's own column, Flink quotes as JSON.)
    "objects": (("JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE {c})",
                 "JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE {c} ABSENT ON NULL)"),
                "exact", ("price", "qty", "supplier_id")),
    # Arithmetic as Flink types it: an integer literal is an INT (a DECIMAL divided by one keeps 13
    # digits of scale), integers divided as integers (in the wider operand's type, truncated toward
    # zero; an AVG of INTs is an INT), a time as text.
    "expressions": (("SUM({c} / 3)", "SUM({c} * 3 - 1)", "MAX(CAST(CAST(qty AS DOUBLE) / 7 AS INT))",
                     "MIN(MOD(qty, 7))", "LISTAGG(DATE_FORMAT(bidtime, 'yyyy-MM-dd HH:mm:ss.SSS'))",
                     "MAX(qty / 7)", "MIN(qty / -3)", "SUM(CAST(qty AS TINYINT) / CAST(3 AS TINYINT))",
                     "MAX(CAST(qty AS BIGINT) / 4)", "COUNT(*) FILTER (WHERE qty / 10 = 4)", "COUNT(*) / COUNT(qty)",
                     "AVG(qty) / 2", "SUM(qty) / -4"),
                    "exact", ("price",)),
    # DECIMAL arithmetic typed as Flink types it (and Spark, but for a literal's type): a product
    # keeps the sum of its operands' scales, a sum the larger, in up to 38 digits; each aggregate
    # over it keeps that scale (a SUM in DECIMAL(38, s), a STDDEV or VARIANCE in DOUBLE).
    "decimal_arithmetic": (("SUM({c} * {c})", "MAX({c} * {c})", "MIN({c} * qty)", "AVG({c} * {c})",
                            "SUM({c} * 2.5)", "SUM({c} + {c} * {c})", "MAX({c} * 0.001)", "SUM({c} / 4)",
                            "SUM({c} * {c}) FILTER (WHERE qty > 40)", "MAX(DISTINCT {c} * qty)",
                            "FIRST_VALUE({c} * {c})", "SUM(CAST({c} AS DECIMAL(12, 4)) * CAST({c} AS DECIMAL(30, 6)))",
                            "SUM({c} * {c}) * 2", "MAX({c} - CAST(qty AS DECIMAL(5, 3)))",
                            "SUM(CAST(qty AS DECIMAL(38, 0)) * 1000000000000000000)",
                            "MIN(CAST(qty AS DECIMAL(38, 0)) * 1000000000000000000)", "MAX(ROUND({c}, 1))",
                            "SUM(ROUND({c} * qty, 0))"),
                           "exact", ("price",)),
    # Functions Spark computes otherwise under the same name, as Flink computes them: REGEXP_EXTRACT
    # without a group extracts the whole match (Spark's default group is 1) and with one that
    # group, CONCAT_WS skips NULLs, TRUNCATE cuts toward zero in its argument's type, a division
    # in floating point by zero is Java's (Spark's fails the job), TIMESTAMPDIFF takes its unit
    # first, and FLOOR and CEIL take a time TO a unit.
    "functions": (("LISTAGG(REGEXP_EXTRACT(supplier_id, 's(.)'))", "LISTAGG(REGEXP_EXTRACT(supplier_id, '(s)(.)', 2), ';')",
                   "LISTAGG(CONCAT_WS('-', supplier_id, CAST(qty AS STRING), CAST({c} AS STRING)))",
                   "MAX(TRUNCATE({c}, 1))", "MIN(TRUNCATE({c}))", "SUM(TRUNCATE(qty, -1))", "MAX(TRUNCATE(score, 2))",
                   "MIN(TRUNCATE(-score))", "SUM(TRUNCATE({c} * qty, 1))", "COUNT(*) FILTER (WHERE score / 0.0e0 > 0)",
                   "LISTAGG(CAST(score / CAST(qty - qty AS DOUBLE) AS STRING), ' ')",
                   "SUM(qty / 0.0e0) FILTER (WHERE qty <> 0)", "MAX(TIMESTAMPDIFF(SECOND, FLOOR(bidtime TO HOUR), bidtime))",
                   "COUNT(DISTINCT FLOOR(bidtime TO MINUTE))", "MIN(CAST(CEIL(bidtime TO MINUTE) AS STRING))",
                   "LISTAGG(CAST(FLOOR(bidtime TO HOUR) AS STRING), ';') FILTER (WHERE qty > 90)"),
                  "exact", ("price",)),
    # TIMESTAMPADD(unit, n, t) by every unit Flink takes, of a TIMESTAMP(3) and of a DATE (by whole
    # days a DATE, by hours or less a TIMESTAMP(6)), in arguments, FILTERs and as text.
    "time_arithmetic": (("MAX(TIMESTAMPADD(MINUTE, qty, bidtime))", "MIN(TIMESTAMPADD(MONTH, qty, bidtime))",
                         "MAX(TIMESTAMPADD(DAY, qty, CAST(bidtime AS DATE)))",
                         "LISTAGG(CAST(TIMESTAMPADD(HOUR, qty, CAST(bidtime AS DATE)) AS STRING), ';')",
                         "COUNT(*) FILTER (WHERE TIMESTAMPADD(WEEK, 1, bidtime) > TIMESTAMP '2020-04-22 09:00:00')",
                         "LISTAGG(CAST(TIMESTAMPADD(QUARTER, qty, bidtime) AS STRING))",
                         "MIN(TIMESTAMPADD(YEAR, qty, CAST(bidtime AS DATE)))", "MAX(TIMESTAMPADD(SECOND, qty, bidtime))",
                         "LISTAGG(CAST(TIMESTAMPADD(SECOND, qty * 7, CAST(bidtime AS TIMESTAMP(0))) AS STRING))",
                         "COUNT(DISTINCT TIMESTAMPADD(MONTH, 1, CAST(bidtime AS DATE)))",
                         "LISTAGG(CAST(TIMESTAMPADD(DAY, qty, CAST(bidtime AS DATE)) AS STRING))",
                         "FIRST_VALUE(TIMESTAMPADD(HOUR, qty, bidtime))",
                         "MAX(TIMESTAMPDIFF(MINUTE, bidtime, TIMESTAMPADD(DAY, qty, bidtime)))"),
                        "exact", ("price",)),
    # FLOOR, CEIL and SIGN keep their argument's type on Flink (Spark's FLOOR and CEIL make a BIGINT,
    # its SIGN a DOUBLE): an AVG or STDDEV of them follows that type (of an INT an INT), a DECIMAL's
    # SIGN is written with its scale.
    "whole_numbers": (("AVG(FLOOR(score))", "AVG(CEIL(score))", "SUM(FLOOR(score * 10))", "AVG(SIGN({c}))",
                       "SUM(SIGN(price))", "MAX(SIGN(score))", "LISTAGG(CAST(SIGN(price) AS STRING))",
                       "SUM(FLOOR({c} / 7))", "AVG(FLOOR({c}))", "AVG(CAST(FLOOR(score) AS DECIMAL(10, 2)))",
                       "MIN(CEIL(CAST(score AS FLOAT)))", "COUNT(DISTINCT SIGN(score))", "AVG(SIGN(price))",
                       "MAX(FLOOR(score) / 4)", "SUM(CEIL(score / 3)) FILTER (WHERE SIGN(qty) > 0)"),
                      "exact", ("qty",)),
    # Flink's functions that Spark has not (SPLIT_INDEX, WEEK, IS_DIGIT, IS_ALPHA) or computes
    # otherwise (INITCAP: a word starts after any character but an ASCII letter or digit): in
    # arguments and FILTERs, SPLIT_INDEX on a whole separator, at whitespace (''), at a character's
    # code, past its pieces; WEEK across the ISO year's ends.
    "flink_functions": (("LISTAGG(INITCAP(CONCAT_WS('-x', supplier_id, CAST({c} AS STRING), 'ab Éc_dE straße')), ';')",
                         "MIN(INITCAP(supplier_id))", "MAX(SPLIT_INDEX(CAST({c} AS STRING), '.', 1))",
                         "LISTAGG(COALESCE(SPLIT_INDEX(CONCAT_WS(',', supplier_id, CAST(qty AS STRING), '', "
                         "CAST({c} AS STRING)), ',', 2), 'none'), ' ')",
                         "COUNT(*) FILTER (WHERE SPLIT_INDEX(CAST({c} AS STRING), '-', 0) = '')",
                         "MIN(SPLIT_INDEX(CONCAT(supplier_id, '  ', CAST(qty AS STRING)), '', 2))",
                         "MAX(SPLIT_INDEX(CAST({c} AS STRING), 46, 0))", "COUNT(SPLIT_INDEX(supplier_id, 's', 2))",
                         "LISTAGG(SPLIT_INDEX(supplier_id, 's', 1))", "COUNT(DISTINCT WEEK(bidtime))",
                         "MAX(WEEK(bidtime + INTERVAL '99' DAY + INTERVAL '99' DAY + INTERVAL '62' DAY))",
                         "MIN(WEEK(bidtime - INTERVAL '99' DAY - INTERVAL '7' DAY))",
                         "COUNT(*) FILTER (WHERE IS_DIGIT(CAST(qty AS STRING)))",
                         "COUNT(*) FILTER (WHERE IS_ALPHA(SPLIT_INDEX(supplier_id, '1', 0)))",
                         "LISTAGG(CAST(IS_DIGIT(SPLIT_INDEX(CAST({c} AS STRING), '.', 0)) AS STRING))"),
                        "exact", ("price",)),
    # A value that is one of its operands (CASE, IF, COALESCE, GREATEST, LEAST), NULLIF, ABS, FLOOR
    # and CEIL, typed as Flink types them (a DECIMAL beside an INT a DECIMAL of every digit of both,
    # beside a DOUBLE a DOUBLE; FLOOR of a DOUBLE a DOUBLE), in every aggregate; GREATEST and LEAST
    # NULL where an argument is. (Flink's own GREATEST fails on a NULL DECIMAL it must cast: its
    # DECIMAL arguments here are of one type.)
    "conditionals": (("SUM(CASE WHEN qty > 40 THEN {c} END)", "MAX(CASE WHEN qty > 40 THEN {c} ELSE 0 END)",
                      "AVG(COALESCE({c}, 0))", "MIN(IF(qty > 40, {c}, -1))", "SUM(NULLIF({c}, 0))", "MAX(ABS({c}))",
                      "FIRST_VALUE(CASE WHEN qty > 40 THEN {c} ELSE 0 END)", "LAST_VALUE(COALESCE({c}, 1))",
                      "SUM(CASE WHEN qty > 40 THEN {c} ELSE score END)", "MAX(COALESCE({c}, score))",
                      "SUM(FLOOR({c}))", "MIN(CEIL({c}))", "SUM({c}) FILTER (WHERE ABS({c}) > 50)",
                      "SUM(CASE WHEN qty > 40 THEN {c} ELSE 0.5 END)", "AVG(ABS({c} * qty))",
                      "MAX(GREATEST(qty, CHAR_LENGTH(supplier_id)))", "MIN(LEAST(score, CAST(qty AS DOUBLE)))",
                      "COUNT(GREATEST(price, CAST(qty AS DECIMAL(10, 2))))", "SUM(LEAST(qty, 50, 20 + qty))",
                      "MAX(FLOOR(score * 10))", "MIN(CEIL(score))", "SUM(CEIL(score - 0.5e0))",
                      "COUNT(DISTINCT FLOOR(score))", "LISTAGG(CAST(FLOOR(qty / 7) AS STRING))"),
                     "exact", ("price", "qty")),
    "conditional_spread": (("STDDEV_POP(CASE WHEN qty > 40 THEN {c} END)", "VAR_POP(COALESCE({c}, 0))",
                            "STDDEV_SAMP(ABS({c}))", "VAR_POP(IF(qty > 40, {c}, 0.5))", "VARIANCE(NULLIF({c}, 0))",
                            "STDDEV_POP(CASE WHEN qty > 40 THEN {c} ELSE score END)", "STDDEV_POP(FLOOR({c}))",
                            "VAR_SAMP(DISTINCT CEIL({c}))"), "double", ("price", "qty")),
    # Logarithms as Java's (Flink's): of 0 -Infinity, of a negative NaN, where Spark's are NULL;
    # LOG10 and LOG2 of their own (LOG(10, x) divides two logarithms: 2.9999999999999996 of 1000).
    "math": (("SUM(LN({c}))", "SUM(LOG10({c}))", "SUM(LOG2({c}))", "SUM(LOG({c}))", "SUM(LOG(2, {c}))",
              "SUM(LOG({c}, 8))", "COUNT(*) FILTER (WHERE LN({c}) > 1)", "MAX(CAST(FLOOR(LOG10({c})) AS INT))",
              "SUM(FLOOR(LOG10(ABS({c}) + 1)))", "MIN(CAST(LOG(1, {c}) AS INT))", "COUNT(LOG(0, {c}))"),
             "exact", ("price", "qty", "score")),
    # Past the range of a type, over INTs that reach theirs (:data:`EXTREMES`): Flink sums a
    # TINYINT, SMALLINT or INT in its own type, and a BIGINT (also an AVG's sum) in a long, its
    # integer arithmetic and casts wrap as Java's do,
    # and a number cast to a DECIMAL too narrow for it is NULL; over a source's columns and over a
    # window's results (a SUM of INTs is an INT).
    "overflow": (("SUM({c} + 2000000000)", "SUM({c} + 2000000000) FILTER (WHERE qty > 40)",
                  "SUM(DISTINCT {c} + 2000000000)", "SUM(CAST({c} AS SMALLINT) + CAST(32000 AS SMALLINT))",
                  "SUM(CAST({c} AS TINYINT))", "MIN(-{c})", "MAX({c} * 3 - 1)",
                  "MAX(CAST({c} AS BIGINT) * 4611686018427387904)", "MAX(CAST({c} AS DECIMAL(5, 0)))",
                  "COUNT(*) FILTER (WHERE {c} + 1 < 0)", "SUM({c}) * 3", "-MIN({c})", "AVG({c}) - 2147483647",
                  "COUNT(*) * 4611686018427387904", "CAST(SUM({c}) AS SMALLINT)",
                  "CAST(MAX({c}) AS DECIMAL(5, 0))", "SUM(CAST({c} AS BIGINT) * 4294967296)",
                  "SUM(CAST({c} AS BIGINT) * 4294967296) FILTER (WHERE qty > 40)",
                  "AVG(CAST({c} AS BIGINT) * 4294967296)", "SUM(DISTINCT CAST({c} AS BIGINT) * 4294967296)",
                  "AVG(DISTINCT CAST({c} AS BIGINT) * 4294967296)", "MIN({c} / -1)",
                  "MIN(CAST({c} AS BIGINT) * 4294967296 / -1)", "SUM({c}) / -1"), "exact", ("qty",)),
    # An AVG beside a STDDEV or VARIANCE, which Flink's planner computes as SUM / COUNT with the SUM
    # in its argument's type: over INTs at their range's ends, a TINYINT's, SMALLINT's and INT's
    # sums wrap there (``analyzer.aggregates.reduces_means``); a BIGINT's, a DECIMAL's and a DOUBLE's
    # AVG are as alone.
    "reduced_means": (("AVG({c})", "AVG({c}) FILTER (WHERE price > 100)", "AVG(DISTINCT {c})",
                       "AVG(CAST({c} AS SMALLINT))", "AVG(CAST({c} AS TINYINT))", "AVG(CAST({c} AS BIGINT))",
                       "AVG(price)", "AVG(score)", "VAR_POP(score)"), "exact", ("qty",)),
    # A fraction CAST to an integer type, as Java narrows it: held to an INT's or a BIGINT's range,
    # a TINYINT or SMALLINT keeping an int's low bits (a DOUBLE's 300.9 is 44, 5e9 is -1); a
    # DECIMAL truncated, then cut to the type's bits; in an argument and over a window's results.
    # STDDEV and VARIANCE past what their exact terms hold: over INTs at their range's ends, a
    # product of a DECIMAL(10, 2) and one reaches 10^12, its sums and squares more (the job failed:
    # "cannot be represented as Decimal(18, 6)"); a BIGINT's past 10^18.
    "large_variance": (("VAR_SAMP({c} * qty)", "STDDEV_POP({c} * qty)", "VAR_POP(DISTINCT {c} * qty)",
                        "STDDEV_SAMP({c} * qty) FILTER (WHERE qty > 40)", "VARIANCE(CAST(qty AS BIGINT) * 4000000000)",
                        "STDDEV_SAMP(DISTINCT CAST(qty AS BIGINT) * 4000000000)"), "double", ("price",)),
    # STDDEV and VARIANCE of DECIMALs too wide for their squares at twice their scale (a
    # DECIMAL(38, 18)'s from 10 up stopped the job, "cannot be represented as Decimal(38, 36)", or
    # left its window's STDDEV 0), in DOUBLE as Flink computes them, each a DECIMAL(38, max(s, 6)).
    "wide_variance": (("STDDEV_POP(CAST({c} AS DECIMAL(38, 18)))",
                       "VAR_SAMP(CAST({c} AS DECIMAL(38, 18))) FILTER (WHERE qty > 40)",
                       "STDDEV_SAMP(DISTINCT CAST({c} AS DECIMAL(38, 18)))", "VAR_POP(CAST({c} AS DECIMAL(30, 10)))",
                       "VARIANCE(CAST({c} AS DECIMAL(20, 2)) * qty)", "STDDEV_POP(CAST({c} AS DECIMAL(19, 2)))"),
                      "floating", ("price", "qty")),
    # The same where their sums outgrow the argument's type: a DECIMAL(38, 35)'s past 1,000 (every
    # window's), a DECIMAL(38, 18)'s past 10^20; and scales past 19, whose squares no decimal holds
    # at twice the scale (the job refused to start: "Decimal scale (74) cannot be greater than
    # precision (38)"), a DECIMAL(19, 19)'s too. The sums of values past what their squares keep
    # exactly are DOUBLEs too. A DISTINCT one whose FILTER leaves a window none is NULL (the job
    # stopped: "Division by zero"). A DISTINCT one whose spread is small beside its mean, in DOUBLE
    # (a DOUBLE's, a DECIMAL(38, 30)'s): from its values, by Welford's running mean as Flink's,
    # where the sums' Σx² − (Σx)² / n lost digits (found by fuzzing: 2e-7 relative).
    "wide_sums": (("STDDEV_POP(CAST({c} AS DECIMAL(38, 35)))",
                   "VAR_SAMP(CAST({c} AS DECIMAL(38, 20))) FILTER (WHERE qty > 40)",
                   "STDDEV_SAMP(DISTINCT CAST({c} AS DECIMAL(38, 35)))",
                   "VAR_POP(CAST(price * 100000000000000000 AS DECIMAL(38, 18)))",
                   "STDDEV_SAMP(DISTINCT CAST(price * 100000000000000000 AS DECIMAL(38, 18)))",
                   "VAR_POP(CAST({c} / 1000.0 AS DECIMAL(19, 19)))",
                   "VAR_SAMP(DISTINCT CAST({c} AS DECIMAL(38, 20))) FILTER (WHERE qty > 90)",
                   "VAR_POP(DISTINCT CAST({c} AS DOUBLE) + 100000000)",
                   "STDDEV_SAMP(DISTINCT CAST({c} / 1000.0 + 1000 AS DECIMAL(38, 30)))"),
                  "floating", ("price", "qty")),
    # SUM and AVG of DECIMALs of 38 digits, in DECIMAL(38, s) as Flink sums them: a DECIMAL(38, 36)'s
    # AVG keeps its 36 places (the job refused it as it started: its state kept 18), a
    # DECIMAL(38, 2)'s sums pass 10^20 (its sum at 18 places overflowed); with DISTINCT (the job
    # stopped: a value past 10^(37 - s) cast into 37 digits, or past 10^20 into 18 places). No sum
    # here passes its type: Flink's overflows to NULL and starts again from the next value
    # (docs/pages/sql.md, "Past a type's range").
    "wide_decimals": (("SUM(CAST({c} / 1000.0 AS DECIMAL(38, 36)))", "AVG(CAST({c} / 1000.0 AS DECIMAL(38, 36)))",
                       "SUM(DISTINCT CAST({c} / 1000.0 AS DECIMAL(38, 36)))",
                       "AVG(DISTINCT CAST({c} / 1000.0 AS DECIMAL(38, 36))) FILTER (WHERE qty > 40)",
                       "AVG(CAST({c} AS DECIMAL(38, 20)))", "AVG(DISTINCT CAST({c} AS DECIMAL(38, 20)))",
                       "AVG(CAST({c} AS DECIMAL(38, 2)) * 1000000000000000000)",
                       "SUM(DISTINCT CAST({c} AS DECIMAL(38, 2)) * 1000000000000000000)",
                       "MAX(CAST({c} / 1000.0 AS DECIMAL(38, 36)))"), "exact", ("price", "qty")),
    "narrowing": (("MAX(CAST({c} * 1000 AS TINYINT))", "MIN(CAST({c} * 100000 AS SMALLINT))",
                   "MAX(CAST({c} * 10000000 AS INT))", "MIN(CAST({c} * 1e17 AS BIGINT))",
                   "MAX(CAST({c} AS TINYINT)) FILTER (WHERE qty > 40)", "CAST(MAX({c}) * 100 AS TINYINT)",
                   "CAST(MIN({c}) * 1e10 AS INT)"), "exact", ("price", "score")),
    # The same over the results Flink computes in DOUBLE: a STDDEV or VARIANCE of a TINYINT or
    # SMALLINT is one (a VAR_POP of TINYINTs of 857.3 is 89), and a sum of doubles cast.
    "narrow_variance": (("VAR_POP(CAST({c} AS TINYINT))", "STDDEV_SAMP(CAST({c} AS SMALLINT))",
                         "VAR_SAMP(CAST({c} * 5 AS SMALLINT)) FILTER (WHERE qty > 20)",
                         "VAR_POP(DISTINCT CAST({c} AS TINYINT))", "VARIANCE({c} * 1000)",
                         "CAST(VAR_POP({c}) AS TINYINT)", "CAST(SUM(CAST({c} AS DOUBLE)) * 1000 AS SMALLINT)",
                         "STDDEV_POP(CAST(price AS DECIMAL(5, 1)))", "VAR_SAMP(CAST(qty AS BIGINT))",
                         "STDDEV_SAMP(CAST(score AS FLOAT))", "VAR_POP(price) FILTER (WHERE qty > 40)",
                         "STDDEV_POP(DISTINCT price)", "VARIANCE(CAST(qty AS DOUBLE))",
                         # over DECIMAL arithmetic, at the scale Flink types it with
                         "STDDEV_POP(price * qty)", "VAR_SAMP(price * price) FILTER (WHERE qty > 40)",
                         "VARIANCE(price / 4)", "STDDEV_SAMP(DISTINCT price * qty)", "VAR_POP(price - 0.5)",
                         "STDDEV_POP(ROUND(price, 1))", "VAR_SAMP(TRUNCATE(price * qty, 1))"),
                        "double", ("qty", "score")),
    # LISTAGG of a NOT NULL argument, which Flink types NOT NULL: '' where the FILTER dropped every
    # row of a window; of a nullable one (a column, SUBSTRING, a CASE without ELSE), NULL there.
    "not_null_lists": (("LISTAGG(COALESCE(supplier_id, 'none')) FILTER (WHERE {c} > 90)",
                        "LISTAGG('x', ';') FILTER (WHERE {c} > 90)",
                        "LISTAGG(UPPER(COALESCE(supplier_id, 'n'))) FILTER (WHERE {c} > 90)",
                        "LISTAGG(CAST(COALESCE({c}, 0) * 2 AS STRING)) FILTER (WHERE {c} > 90)",
                        "LISTAGG(CASE WHEN {c} > 95 THEN 'hi' ELSE 'lo' END) FILTER (WHERE {c} > 90)",
                        "LISTAGG(IF({c} IS NULL, 'none', 'some')) FILTER (WHERE {c} > 90)",
                        "LISTAGG(CAST({c} AS STRING)) FILTER (WHERE {c} > 90)",
                        "LISTAGG(SUBSTRING(COALESCE(supplier_id, 'x'), 1)) FILTER (WHERE {c} > 90)",
                        "LISTAGG(CASE WHEN {c} > 95 THEN 'hi' END) FILTER (WHERE {c} > 90)",
                        "LISTAGG(DISTINCT COALESCE(supplier_id, 'none'), '|') FILTER (WHERE {c} > 90)"),
                       "exact", ("qty",)),
    # A sample STDDEV or VARIANCE of a NOT NULL argument, which Flink types NOT NULL: -1 (its type's
    # default) for the NULL of a window's single value, but with a FILTER (NULL) or of a DECIMAL
    # (NULL; Flink's own collect fails on it, so not recorded). Sparse bids: single values are common.
    "not_null_spreads": (("STDDEV_SAMP(COALESCE({c}, 0))", "VAR_SAMP(COALESCE({c}, 0))",
                          "VARIANCE(DISTINCT COALESCE({c}, 0))", "STDDEV_SAMP(COALESCE({c}, 0) + 1) FILTER (WHERE qty > 40)",
                          "VAR_POP(COALESCE({c}, 0))", "STDDEV_SAMP({c})", "VAR_SAMP(CAST(COALESCE({c}, 0) AS SMALLINT))"),
                         "double", ("qty", "score")),
    # STDDEV and VARIANCE of equal floating-point values: Flink's Welford mean and M2 (WELFORD_M2)
    # are 0 over them, where sums of 0.1 and of its squares leave a rounding (-1.2e-18 for three:
    # a STDDEV of NaN).
    "steady_spreads": (("STDDEV_POP(CAST({c} * 0 + 0.1 AS DOUBLE))", "VAR_SAMP(CAST({c} * 0 + 0.7 AS DOUBLE))",
                        "STDDEV_SAMP(CAST({c} * 0 AS DOUBLE) + 123.456)", "VAR_POP(CAST({c} * 0 + 0.1 AS FLOAT))",
                        "STDDEV_POP(CAST({c} * 0 + 0.1 AS DOUBLE)) FILTER (WHERE qty > 40)",
                        "VARIANCE(DISTINCT CAST({c} * 0 + 0.3 AS DOUBLE))"),
                       "double", ("price", "score")),
    # DISTINCT sums and spreads of decimals of a large scale (``price / 3`` is a DECIMAL(21, 13)):
    # each addition of a set's values keeps the whole scale.
    "distinct_scales": (("STDDEV_SAMP(DISTINCT {c} / 3)", "VAR_POP(DISTINCT {c} / 7) FILTER (WHERE qty > 40)",
                         "SUM(DISTINCT {c} / 9)", "VARIANCE(DISTINCT {c} / 3)",
                         "STDDEV_POP(DISTINCT CAST({c} AS DECIMAL(20, 12)))"),
                        "double", ("price",)),
    # DISTINCT, over every window kind Flink runs it on. Flink orders a DISTINCT list by its own
    # hash table, stategate by each value's first arrival (analyzer.aggregates.Distinct): the
    # family's lists are held to the same values (``sets``).
    "distinct": (("COUNT(DISTINCT {c})", "AVG(DISTINCT {c})", "MIN(DISTINCT {c}) FILTER (WHERE qty > 40)",
                  "LISTAGG(DISTINCT CAST({c} AS STRING))", "LISTAGG(DISTINCT CAST({c} AS STRING), ';') FILTER (WHERE qty > 40)",
                  "COLLECT(DISTINCT {c})", "COLLECT(DISTINCT {c}) FILTER (WHERE qty > 40)", "FIRST_VALUE(DISTINCT {c})"),
                 "sets", ("price", "qty")),
    # Result types and NULLs over the other types a column can have: integers of every width, a
    # time, a date, a BOOLEAN, a FLOAT, text and DECIMALs of other scales; each aggregate over
    # them, with DISTINCT and FILTER, and over expressions (CASE, COALESCE, a product, a BOOLEAN
    # and times of three precisions cast to text).
    "types": (("SUM(CAST(qty AS BIGINT))", "AVG(CAST(qty AS BIGINT))", "AVG(CAST(qty AS TINYINT))",
               "MIN(CAST(qty AS SMALLINT))", "MAX(CAST(qty AS BIGINT)) FILTER (WHERE qty > 40)",
               "MIN(bidtime)", "MAX(bidtime) FILTER (WHERE qty > 40)", "MAX(CAST(bidtime AS DATE))",
               "MAX(qty > 40)", "MIN(qty > 40)", "MIN(supplier_id)", "MAX(supplier_id) FILTER (WHERE qty > 40)",
               "MIN(CAST(score AS FLOAT))", "MAX(CAST(score AS FLOAT))", "AVG(CAST(price AS DECIMAL(12, 4)))",
               "SUM(CAST(price AS DECIMAL(5, 1)))", "AVG(score)", "COUNT(DISTINCT supplier_id)",
               "FIRST_VALUE(bidtime)", "LAST_VALUE(supplier_id)", "FIRST_VALUE(CAST(score AS FLOAT))",
               "LISTAGG(supplier_id, '')", "COLLECT(supplier_id)", "COLLECT(CAST(qty AS BIGINT))",
               "FIRST_VALUE(CAST(bidtime AS DATE))", "LAST_VALUE(qty > 40)", "FIRST_VALUE(score)",
               "LAST_VALUE(CAST(qty AS BIGINT))", "FIRST_VALUE(CAST(qty AS TINYINT)) FILTER (WHERE price > 100)",
               "LAST_VALUE(bidtime)", "LAST_VALUE(CAST(price AS DECIMAL(5, 1)))", "LAST_VALUE(DISTINCT supplier_id)",
               "JSON_ARRAYAGG(qty > 40)", "JSON_ARRAYAGG(CAST(qty AS BIGINT))", "JSON_ARRAYAGG(CAST(price AS DECIMAL(5, 1)))",
               "JSON_ARRAYAGG(CAST(qty AS TINYINT) NULL ON NULL)", "SUM(CAST(qty AS DOUBLE))", "AVG(CAST(qty AS DOUBLE))",
               "AVG(CAST(price AS DECIMAL(5, 1)))", "AVG(CAST(qty AS SMALLINT))", "SUM(CAST(qty AS SMALLINT))",
               "AVG(CAST(qty AS DECIMAL(10, 0)))", "SUM(CAST(price AS DECIMAL(38, 2)))", "MIN(CAST(price AS BIGINT))",
               "MAX(CAST(score AS DECIMAL(6, 3)))", "MIN(CAST(bidtime AS DATE)) FILTER (WHERE qty > 40)",
               "MIN(DISTINCT bidtime)", "MAX(DISTINCT CAST(bidtime AS DATE))", "MAX(DISTINCT supplier_id)",
               "COUNT(DISTINCT bidtime)", "COUNT(DISTINCT score)", "AVG(DISTINCT score)", "SUM(DISTINCT CAST(qty AS BIGINT))",
               "COUNT(qty > 40)", "COUNT(DISTINCT qty > 40)", "SUM(CASE WHEN qty > 40 THEN price END)",
               "MAX(COALESCE(qty, -1))", "MAX(price * qty)", "LISTAGG(CAST(qty AS STRING), '') FILTER (WHERE price > 100)",
               "MIN(qty) FILTER (WHERE score > 0 AND price < 200)", "COUNT(*) FILTER (WHERE supplier_id = 's1')",
               "LISTAGG(CAST(qty > 40 AS STRING), '-')", "LISTAGG(CAST(bidtime AS STRING))",
               "MIN(CAST(CAST(bidtime AS TIMESTAMP(0)) AS STRING)) FILTER (WHERE qty > 40)",
               "MAX(CAST(CAST(bidtime AS TIMESTAMP) AS STRING))", "CAST(MAX(bidtime) AS STRING)",
               "CAST(MIN(qty > 40) AS STRING)", "FIRST_VALUE(DISTINCT bidtime)", "LAST_VALUE(DISTINCT qty > 40)",
               "LAST_VALUE(DISTINCT CAST(price AS DECIMAL(5, 1)))", "LISTAGG(DISTINCT supplier_id) FILTER (WHERE qty > 40)",
               "COUNT(DISTINCT CAST(bidtime AS DATE))", "MAX(DISTINCT qty > 40)", "SUM(DISTINCT CAST(qty AS SMALLINT))",
               "JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE qty > 40)",
               "JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE CAST(qty AS BIGINT))",
               "JSON_OBJECTAGG(KEY DATE_FORMAT(bidtime, 'HH:mm:ss') VALUE CAST(price AS DECIMAL(5, 1)))",
               "MIN(qty / 3) FILTER (WHERE qty / 7 > 2)", "LISTAGG(CAST(qty / 4 AS STRING), ';')"),
              "exact", ("qty",)),
    # What a window without a value gives: every aggregate over no row (a FILTER that never holds).
    # A NULL group key (:data:`NULL_KEYS`): Flink groups its rows as one key, in every window kind.
    "null_keys": (("COUNT(*)", "SUM({c})", "MAX({c})", "COUNT(DISTINCT {c})", "LISTAGG(CAST({c} AS STRING))"),
                  "exact", ("qty",)),
    "empty": (tuple(f"{call} FILTER (WHERE qty > 1000)" for call in (
        "COUNT(*)", "COUNT({c})", "SUM({c})", "AVG({c})", "MIN({c})", "MAX({c})", "STDDEV_POP({c})", "VAR_SAMP({c})",
        "COUNT(DISTINCT {c})", "SUM(DISTINCT {c})", "FIRST_VALUE({c})", "LAST_VALUE({c})",
        "LISTAGG(CAST({c} AS STRING))", "LISTAGG(DISTINCT CAST({c} AS STRING))", "ARRAY_AGG({c})",
        "ARRAY_AGG(DISTINCT {c})", "COLLECT({c})", "COLLECT(DISTINCT {c})")), "exact", ("price", "score")),
    "distinct_arrays": (("ARRAY_AGG(DISTINCT {c})", "ARRAY_AGG(DISTINCT {c} IGNORE NULLS)",
                         "ARRAY_AGG(DISTINCT {c}) FILTER (WHERE qty > 40)"), "sets", ("price", "qty")),
}
#: Families of whole queries, by what each shows rather than by window kind (a query may open with
#: the views it reads, each statement ending with ``;`` and a new line): past a type's range
#: downstream of a window aggregation, in a cascaded window (over HOP windows), a window Top-N, a
#: window join, and an aggregation of whole windows of every kind (``GROUP BY
#: window_start, window_end`` over their results; its first column the least supplier, so that the
#: closing bid's own window, which Flink emits at the end of its input, is left out as elsewhere).
SHAPES = {
    # One aggregate spelled two ways in one query, in its SELECT list and its HAVING (``COUNT(*)`` and
    # ``COUNT(1)``, ``ARRAY_AGG(x)`` and ``ARRAY_AGG(x) RESPECT NULLS``): one state, whose result the
    # engine found only under its first spelling (the job stopped as it started, "`a0` RESPECT
    # NULLS" or "MISSING_GROUP_BY", after the gate had passed it; found by fuzzing).
    "spellings": ({kind: "SELECT supplier_id, window_start, window_end,\n  COUNT(*) AS a0, COUNT(1) AS a1, "
                         "CARDINALITY(ARRAY_AGG(qty)) AS a2, CARDINALITY(ARRAY_AGG(qty) RESPECT NULLS) AS a3, "
                         "MAX(price) AS a4\n"
                         f"FROM TABLE({window})\nGROUP BY supplier_id, window_start, window_end\n"
                         "HAVING COUNT(2) > 3 AND MAX(price) FILTER (WHERE qty > 40) > 100 "
                         "AND ARRAY_AGG(qty) RESPECT NULLS[1] IS NOT NULL"
                   for kind, window in WINDOWS.items()}, "exact"),
    "downstream": ({
        "cascade": "CREATE TEMPORARY VIEW Tumbled AS\nSELECT supplier_id, window_time, SUM(qty) AS s, MAX(qty) AS m\n"
                   f"FROM TABLE({WINDOWS['tumble']})\nGROUP BY supplier_id, window_start, window_end, window_time;\n"
                   "SELECT supplier_id, window_start, window_end,\n  SUM(s * 2) AS a0, MAX(m + 1) AS a1, "
                   "SUM(s) + 2147483647 AS a2, MIN(-m) AS a3, CAST(MAX(s) AS SMALLINT) AS a4\n"
                   "FROM TABLE(HOP(TABLE Tumbled, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '30' MINUTES))\n"
                   "GROUP BY supplier_id, window_start, window_end",
        "top_n": "SELECT supplier_id, window_start, window_end, v, w FROM (\n  SELECT *, ROW_NUMBER() OVER ("
                 "PARTITION BY window_start, window_end ORDER BY v DESC) AS rownum FROM (\n"
                 "    SELECT supplier_id, window_start, window_end, SUM(qty) * 3 AS v, MAX(qty) + 1 AS w\n"
                 f"    FROM TABLE({WINDOWS['hop']})\n    GROUP BY supplier_id, window_start, window_end))\n"
                 "WHERE rownum <= 2",
        "join": "SELECT L.supplier_id, L.window_start, L.window_end, L.s + R.m AS a0, L.s * R.m AS a1, -L.s AS a2,\n"
                "  CAST(L.s AS TINYINT) AS a3\nFROM (\n  SELECT supplier_id, window_start, window_end, SUM(qty) AS s\n"
                f"  FROM TABLE({WINDOWS['tumble']})\n  GROUP BY supplier_id, window_start, window_end) L\nJOIN (\n"
                "  SELECT supplier_id, window_start, window_end, MAX(qty) AS m\n"
                f"  FROM TABLE({WINDOWS['tumble']})\n  GROUP BY supplier_id, window_start, window_end) R\n"
                "ON L.supplier_id = R.supplier_id AND L.window_start = R.window_start AND L.window_end = R.window_end",
        "whole_windows": "CREATE TEMPORARY VIEW PerSupplier AS\nSELECT supplier_id, window_start, window_end, SUM(qty) AS s, "
                         "MAX(price) AS p, COUNT(*) AS c, SUM(CAST(qty AS BIGINT) * 4294967296) AS b\n"
                         f"FROM TABLE({WINDOWS['tumble']})\nGROUP BY supplier_id, window_start, window_end;\n"
                         "SELECT MIN(supplier_id) AS first, window_start, window_end,\n  SUM(s) AS a0, AVG(s) AS a1, "
                         "AVG(p) AS a2, AVG(c) AS a3, COUNT(DISTINCT s) AS a4, SUM(s) FILTER (WHERE c > 5) AS a5, "
                         "SUM(s) * 2 AS a6, MAX(p) AS a7, SUM(b) AS a8, AVG(b) AS a9\nFROM PerSupplier\n"
                         "GROUP BY window_start, window_end",
        "whole_hop_windows": "CREATE TEMPORARY VIEW PerSupplierHop AS\nSELECT supplier_id, window_start, window_end, "
                             f"SUM(qty) AS s, COUNT(*) AS c\nFROM TABLE({WINDOWS['hop']})\n"
                             "GROUP BY supplier_id, window_start, window_end;\n"
                             "SELECT MIN(supplier_id) AS first, window_start, window_end,\n  AVG(s) AS a0, SUM(s) AS a1, "
                             "MAX(c) AS a2, AVG(s) FILTER (WHERE c > 5) AS a3\nFROM PerSupplierHop\n"
                             "GROUP BY window_start, window_end",
        **{f"whole_{kind}_windows": f"CREATE TEMPORARY VIEW PerSupplier_{kind} AS\nSELECT supplier_id, window_start, "
                                    f"window_end, SUM(qty) AS s, COUNT(*) AS c\nFROM TABLE({WINDOWS[kind]})\n"
                                    "GROUP BY supplier_id, window_start, window_end;\n"
                                    "SELECT MIN(supplier_id) AS first, window_start, window_end, AVG(s) AS a0, "
                                    f"SUM(c) AS a1\nFROM PerSupplier_{kind}\nGROUP BY window_start, window_end"
           for kind in ("cumulate", "session")},
    }, "exact"),
    # Cascades whose outer window is a SESSION over the windows' ``window_time`` (its start and end
    # are those times: the window's last millisecond), and outer calls that the windows they read
    # computed too, under the same key: a COUNT(*) over windows that kept a COUNT(*), a MIN of the
    # group key over windows that kept that MIN, alone, with a FILTER reading the inner one, in a
    # cascade and over whole windows.
    "cascades": ({
        "tumble_session": "CREATE TEMPORARY VIEW Counted AS\nSELECT supplier_id, window_time, COUNT(*) AS c, SUM(qty) AS s, "
                          f"MIN(supplier_id) AS ms\nFROM TABLE({WINDOWS['tumble']})\n"
                          "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                          "SELECT supplier_id, window_start, window_end, COUNT(*) AS a0, COUNT(*) FILTER (WHERE c > 30) AS a1, "
                          "SUM(c) AS a2, MIN(supplier_id) AS a3, MAX(s) AS a4, CAST(window_end AS STRING) AS a5\n"
                          "FROM TABLE(SESSION(TABLE Counted PARTITION BY supplier_id, DESCRIPTOR(window_time), "
                          "INTERVAL '10' MINUTES))\nGROUP BY supplier_id, window_start, window_end",
        "session_session": "CREATE TEMPORARY VIEW Sessions AS\nSELECT supplier_id, window_time, COUNT(*) AS c\n"
                           f"FROM TABLE({WINDOWS['session']})\nGROUP BY supplier_id, window_start, window_end, window_time;\n"
                           "SELECT supplier_id, window_start, window_end, COUNT(*) AS a0, SUM(c) AS a1, MAX(c) AS a2\n"
                           "FROM TABLE(SESSION(TABLE Sessions PARTITION BY supplier_id, DESCRIPTOR(window_time), "
                           "INTERVAL '4' MINUTES))\nGROUP BY supplier_id, window_start, window_end",
        "session_cumulate": "CREATE TEMPORARY VIEW Sessions2 AS\nSELECT supplier_id, window_time, COUNT(*) AS c\n"
                            f"FROM TABLE({WINDOWS['session']})\nGROUP BY supplier_id, window_start, window_end, window_time;\n"
                            "SELECT supplier_id, window_start, window_end, COUNT(*) AS a0, COUNT(*) FILTER (WHERE c > 1) AS a1\n"
                            "FROM TABLE(CUMULATE(TABLE Sessions2, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, "
                            "INTERVAL '30' MINUTES))\nGROUP BY supplier_id, window_start, window_end",
        # Flink's window Top-N ranks the windows of one end together: SESSIONs over sparse windows'
        # times end together with different starts.
        "session_top_n": "CREATE TEMPORARY VIEW Sparse AS\nSELECT supplier_id, window_time, COUNT(*) AS c\n"
                         f"FROM TABLE({WINDOWS['tumble'].replace('10', '5')})\nWHERE qty > 80\n"
                         "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                         "SELECT supplier_id, window_start, window_end, n, rn FROM (\n  SELECT *, ROW_NUMBER() OVER ("
                         "PARTITION BY window_start, window_end ORDER BY n DESC, supplier_id) AS rn FROM (\n"
                         "    SELECT supplier_id, window_start, window_end, SUM(c) AS n\n"
                         "    FROM TABLE(SESSION(TABLE Sparse PARTITION BY supplier_id, DESCRIPTOR(window_time), "
                         "INTERVAL '10' MINUTES))\n    GROUP BY supplier_id, window_start, window_end))\nWHERE rn <= 2",
        # A WHERE over the windows a cascade reads: before its own window, and before an
        # aggregation of whole windows.
        "filtered": "CREATE TEMPORARY VIEW Few AS\nSELECT supplier_id, window_time, COUNT(*) AS c, MAX(qty) AS m\n"
                    f"FROM TABLE({WINDOWS['tumble'].replace('10', '5')})\n"
                    "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                    "SELECT supplier_id, window_start, window_end, COUNT(*) AS a0, SUM(c) AS a1, MIN(m) AS a2\n"
                    "FROM TABLE(HOP(TABLE Few, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES))\n"
                    "WHERE c > 8 AND m < 100\nGROUP BY supplier_id, window_start, window_end",
        "filtered_whole": "CREATE TEMPORARY VIEW FewHop AS\nSELECT supplier_id, window_start, window_end, COUNT(*) AS c\n"
                          f"FROM TABLE({WINDOWS['hop']})\nGROUP BY supplier_id, window_start, window_end;\n"
                          "SELECT MIN(supplier_id) AS first, window_start, window_end, COUNT(*) AS a0, SUM(c) AS a1\n"
                          "FROM FewHop\nWHERE c > 10\nGROUP BY window_start, window_end",
        "whole_windows": "CREATE TEMPORARY VIEW CountedHop AS\nSELECT supplier_id, window_start, window_end, COUNT(*) AS c, "
                         f"MIN(supplier_id) AS ms, MAX(qty) AS m\nFROM TABLE({WINDOWS['hop']})\n"
                         "GROUP BY supplier_id, window_start, window_end;\n"
                         "SELECT MIN(supplier_id) AS first, window_start, window_end, COUNT(*) AS a0, "
                         "COUNT(*) FILTER (WHERE c > 5) AS a1, SUM(c) AS a2, MAX(m) AS a3, MAX(ms) AS a4\n"
                         "FROM CountedHop\nGROUP BY window_start, window_end",
    }, "exact"),
    # Window joins of every kind of join and window, each side filtering the bids its own way. Flink
    # joins two windows by their end (its planner splits the window_start and window_end equalities
    # off, and its join operator keeps each side's rows by window end): SESSIONs ending together
    # join whatever their starts.
    "window_joins": ({
        f"{kind}_{how.split()[0].lower()}": (
            "SELECT CONCAT(COALESCE(L.supplier_id, '-'), '|', COALESCE(R.supplier_id, '-')) AS k, "
            f"{start} AS ws, {start.replace('start', 'end')} AS we, L.window_start AS a0, R.window_start AS a1, "
            "L.n AS a2, R.m AS a3\nFROM (\n  SELECT supplier_id, window_start, window_end, COUNT(*) AS n\n"
            f"  FROM TABLE({WINDOWS[kind]})\n  WHERE qty > 50\n  GROUP BY supplier_id, window_start, window_end) L\n"
            f"{how} (\n  SELECT supplier_id, window_start, window_end, MAX(qty) AS m\n  FROM TABLE({WINDOWS[kind]})\n"
            "  WHERE score > 0\n  GROUP BY supplier_id, window_start, window_end) R\n"
            "ON L.supplier_id = R.supplier_id AND L.window_start = R.window_start AND L.window_end = R.window_end"
            f"{extra}")
        for kind, how, start, extra in (
            ("session", "JOIN", "R.window_start", ""),
            ("session", "FULL OUTER JOIN", "COALESCE(R.window_start, L.window_start)", ""),
            ("session", "LEFT JOIN", "L.window_start", " AND R.m > 20"),
            ("hop", "LEFT JOIN", "L.window_start", " AND L.n > R.m / 40"),
            ("cumulate", "RIGHT JOIN", "R.window_start", ""),
        )
    }, "exact"),
    # Window Top-N filters as Flink's planner reads them: a rank range that starts past 1 (``BETWEEN``,
    # ``=``, a lower bound), the literal first, NOT, arithmetic, and conditions beside the rank,
    # which Flink applies to the ranked rows (on an aggregate's result, on a window attribute).
    "rank_ranges": ({
        kind: "SELECT supplier_id, window_start, window_end, v, w, rownum FROM (\n  SELECT *, ROW_NUMBER() OVER ("
              f"PARTITION BY window_start, window_end ORDER BY {order}) AS rownum FROM (\n"
              "    SELECT supplier_id, window_start, window_end, SUM(qty) AS v, MAX(price) AS w\n"
              f"    FROM TABLE({WINDOWS[kind]})\n    GROUP BY supplier_id, window_start, window_end))\n"
              f"WHERE {where}"
        for kind, order, where in (
            ("tumble", "v DESC, supplier_id", "rownum BETWEEN 2 AND 3"),
            ("hop", "w DESC, supplier_id DESC", "2 = rownum AND v > 100"),
            ("cumulate", "v, supplier_id", "NOT rownum > 2 AND window_start >= TIMESTAMP '2020-04-15 08:30:00'"),
            ("session", "v DESC, supplier_id", "rownum >= 1 AND rownum < 1 + 2 AND w IS NOT NULL"),
        )
    } | {
        "tumble_lower": "SELECT supplier_id, window_start, window_end, v FROM (\n  SELECT *, ROW_NUMBER() OVER ("
                        "PARTITION BY window_start, window_end ORDER BY v DESC NULLS FIRST, supplier_id) AS rownum FROM (\n"
                        "    SELECT supplier_id, window_start, window_end, MAX(qty) FILTER (WHERE qty > 90) AS v\n"
                        f"    FROM TABLE({WINDOWS['tumble']})\n    GROUP BY supplier_id, window_start, window_end))\n"
                        "WHERE rownum > 1 AND 4 >= rownum",
    }, "exact"),
    # Legacy group windows (``GROUP BY HOP(...)``), which Flink runs with an operator of their own:
    # a HOP's LISTAGG lists its panes from the first on, where a window TVF's HOP lists its slices
    # from the latest back; a LISTAGG's result (a STRING) read by a cascaded window; window
    # attributes cast to text.
    "legacy_windows": ({
        "tumble": "SELECT supplier_id, TUMBLE_START(bidtime, INTERVAL '10' MINUTE) AS ws, "
                  "TUMBLE_END(bidtime, INTERVAL '10' MINUTE) AS we, LISTAGG(CAST(qty AS STRING)) AS a0, "
                  "FIRST_VALUE(price) AS a1, LAST_VALUE(qty) AS a2, MIN(DISTINCT bidtime) AS a3, COLLECT(qty) AS a4, "
                  "AVG(price) AS a5, CAST(TUMBLE_END(bidtime, INTERVAL '10' MINUTE) AS STRING) AS a6\nFROM Bid\n"
                  "GROUP BY supplier_id, TUMBLE(bidtime, INTERVAL '10' MINUTE)",
        "hop": "SELECT supplier_id, HOP_START(bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE) AS ws, "
               "HOP_END(bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE) AS we, LISTAGG(CAST(qty AS STRING)) AS a0, "
               "LISTAGG(CAST(price AS STRING), ';') FILTER (WHERE qty > 40) AS a1, COUNT(DISTINCT price) AS a2, "
               "MAX(DISTINCT bidtime) AS a3, COLLECT(qty) AS a4, SUM(price) AS a5\nFROM Bid\n"
               "GROUP BY supplier_id, HOP(bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE)",
        "session": "SELECT supplier_id, SESSION_START(bidtime, INTERVAL '3' MINUTE) AS ws, "
                   "SESSION_END(bidtime, INTERVAL '3' MINUTE) AS we, LISTAGG(CAST(qty AS STRING)) AS a0, "
                   "MAX(DISTINCT bidtime) AS a1, COLLECT(qty) AS a2, AVG(price) AS a3\nFROM Bid\n"
                   "GROUP BY supplier_id, SESSION(bidtime, INTERVAL '3' MINUTE)",
        "cascade": "CREATE TEMPORARY VIEW Listed AS\nSELECT supplier_id, window_time, SUM(qty) AS s, "
                   "LISTAGG(CAST(qty AS STRING)) AS l\n"
                   f"FROM TABLE({WINDOWS['tumble']})\nGROUP BY supplier_id, window_start, window_end, window_time;\n"
                   "SELECT supplier_id, window_start, window_end, MAX(l) AS a0, MIN(l) FILTER (WHERE s > 300) AS a1, "
                   "COUNT(DISTINCT l) AS a2, COLLECT(s) AS a3, CAST(window_start AS STRING) AS a4\n"
                   "FROM TABLE(HOP(TABLE Listed, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '30' MINUTES))\n"
                   "GROUP BY supplier_id, window_start, window_end",
    }, "exact"),
    # Casts to a text of a length, which Flink cuts values to (a CHAR's padded with spaces; CHAR is
    # CHAR(1)) and Spark's CAST does not: numbers, BOOLEANs, times and text, in a group key (one
    # letter of the supplier: one group a window), a FILTER, a WHERE, an aggregate's argument and
    # over its result.
    "text_lengths": ({
        "tumble": "SELECT CAST(supplier_id AS VARCHAR(1)) AS k, window_start, window_end, COUNT(*) AS a0, "
                  "LISTAGG(CAST(price AS VARCHAR(4))) AS a1, MAX(CAST(qty AS CHAR(4)) || '|') AS a2, "
                  "LISTAGG(CAST(qty > 40 AS VARCHAR(3)), ';') AS a3, MIN(CAST(bidtime AS VARCHAR(16))) AS a4, "
                  "CAST(MAX(qty) AS VARCHAR(1)) AS a5, COUNT(DISTINCT CAST(price AS VARCHAR(2))) AS a6, "
                  "COUNT(*) FILTER (WHERE CAST(supplier_id AS CHAR(3)) = 's1 ') AS a7, "
                  "MAX(CAST(supplier_id AS CHAR)) AS a8, LISTAGG(CAST(bidtime AS CHAR(25)) || '|') AS a9, "
                  "CAST(MIN(qty > 40) AS CHAR(2)) AS a10, COUNT(DISTINCT CAST(supplier_id AS VARCHAR)) AS a11\n"
                  f"FROM TABLE({WINDOWS['tumble']})\nWHERE CAST(supplier_id AS VARCHAR(1)) = 's'\n"
                  "GROUP BY CAST(supplier_id AS VARCHAR(1)), window_start, window_end",
        "hop": "SELECT CAST(supplier_id AS CHAR(6)) AS k, window_start, window_end, "
               "LISTAGG(CAST(qty AS CHAR(3)), ',') AS a0, MIN(CAST(price AS VARCHAR(3))) AS a1, "
               "MAX(CAST(CAST(bidtime AS DATE) AS CHAR(12)) || '|') AS a2, CAST(SUM(qty) AS CHAR(6)) || '|' AS a3, "
               "COUNT(*) FILTER (WHERE CAST(qty AS VARCHAR(1)) = '4') AS a4\n"
               f"FROM TABLE({WINDOWS['hop']})\nGROUP BY CAST(supplier_id AS CHAR(6)), window_start, window_end",
        "cumulate": "SELECT supplier_id, window_start, window_end, MAX(CAST(qty AS VARCHAR(2))) AS a0, "
                    "LISTAGG(CAST(price AS CHAR(8)), '') AS a1, "
                    "COUNT(*) FILTER (WHERE CAST(qty AS VARCHAR(1)) = '4') AS a2, "
                    "MIN(CAST(CAST(bidtime AS TIMESTAMP(0)) AS VARCHAR(30)) || '|') AS a3\n"
                    f"FROM TABLE({WINDOWS['cumulate']})\nGROUP BY supplier_id, window_start, window_end",
        "session": "SELECT supplier_id, window_start, window_end, LISTAGG(CAST(qty > 40 AS CHAR(5)) || '|') AS a0, "
                   "MIN(CAST(bidtime AS CHAR(19))) AS a1, CAST(COUNT(*) AS CHAR(3)) || '|' AS a2, "
                   "MAX(CAST(supplier_id AS CHAR(1))) AS a3\n"
                   f"FROM TABLE({WINDOWS['session']})\nGROUP BY supplier_id, window_start, window_end",
    }, "exact"),
    # Aggregates' results typed as Flink types them, downstream of a window: an AVG, STDDEV or
    # VARIANCE of INTs is an INT, in a cascade's input (over TUMBLE and SESSION windows) and in the
    # SELECT list's arithmetic.
    # Groups keyed by FLOOR, CEIL or SIGN of a number, whose state keeps Spark's type (a deployed
    # checkpoint's key) and whose values are read in Flink's: written as text, divided, and read by a
    # cascaded window.
    "whole_keys": ({
        "tumble": "SELECT FLOOR(score) AS k, window_start, window_end, COUNT(*) AS a0, "
                  "CAST(FLOOR(score) AS STRING) AS a1, FLOOR(score) / 4 AS a2, MAX(qty) AS a3\n"
                  f"FROM TABLE({WINDOWS['tumble']})\nWHERE supplier_id <> 'closer'\n"
                  "GROUP BY FLOOR(score), window_start, window_end",
        "hop": "SELECT SIGN(qty) AS k, window_start, window_end, SUM(price) AS a0, CAST(SIGN(qty) AS STRING) AS a1, "
               "SIGN(qty) / 2 AS a2\n"
               f"FROM TABLE({WINDOWS['hop']})\nWHERE supplier_id <> 'closer'\n"
               "GROUP BY SIGN(qty), window_start, window_end",
        "cascade": "CREATE TEMPORARY VIEW Floors AS\nSELECT FLOOR(score / 4) AS f, window_time, COUNT(*) AS c\n"
                   f"FROM TABLE({WINDOWS['tumble']})\nWHERE supplier_id <> 'closer'\n"
                   "GROUP BY FLOOR(score / 4), window_start, window_end, window_time;\n"
                   "SELECT f, window_start, window_end, SUM(c) AS a0, AVG(f) AS a1, CAST(f AS STRING) AS a2\n"
                   "FROM TABLE(TUMBLE(TABLE Floors, DESCRIPTOR(window_time), INTERVAL '30' MINUTES))\n"
                   "GROUP BY f, window_start, window_end",
    }, "exact"),
    # SELECT DISTINCT over a window TVF's rows with window_start and window_end: Flink plans it as
    # a window aggregation of no aggregates, one row per window and distinct row.
    "distinct_rows": ({
        "tumble": f"SELECT DISTINCT supplier_id, window_start, window_end\nFROM TABLE({WINDOWS['tumble']})",
        "hop": "SELECT DISTINCT CONCAT(supplier_id, '-', CAST(qty > 40 AS STRING)) AS k, window_start, window_end, "
               f"window_time\nFROM TABLE({WINDOWS['hop']})\nWHERE price > 10",
        "cumulate": "SELECT DISTINCT UPPER(supplier_id) AS k, window_start, window_end\n"
                    f"FROM TABLE({WINDOWS['cumulate']})\nWHERE qty IS NOT NULL AND supplier_id <> 'closer'",
        "session": f"SELECT DISTINCT supplier_id, window_start, window_end\nFROM TABLE({WINDOWS['session']})",
        "windows": "SELECT DISTINCT window_start, window_end, window_time\n"
                   f"FROM TABLE({WINDOWS['tumble']})\nWHERE supplier_id <> 'closer'",
    }, "exact"),
    "results_typed": ({
        "tumble_cascade": "CREATE TEMPORARY VIEW Spread AS\nSELECT supplier_id, window_time, VAR_SAMP(qty) AS v, "
                          f"AVG(qty) AS a\nFROM TABLE({WINDOWS['tumble']})\n"
                          "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                          "SELECT supplier_id, window_start, window_end, MAX(v) + 1 AS a0, SUM(a) * 2 AS a1, "
                          "AVG(a) AS a2, MIN(v) FILTER (WHERE a > 40) AS a3, SUM(v / 2) AS a4, MAX(a) / 3 AS a5\n"
                          "FROM TABLE(TUMBLE(TABLE Spread, DESCRIPTOR(window_time), INTERVAL '30' MINUTES))\n"
                          "GROUP BY supplier_id, window_start, window_end",
        "session_cascade": "CREATE TEMPORARY VIEW Sessions AS\nSELECT supplier_id, window_time, COUNT(*) AS c, "
                           f"VAR_POP(qty) AS v, AVG(qty) AS a\nFROM TABLE({WINDOWS['session']})\n"
                           "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                           "SELECT supplier_id, window_start, window_end, SUM(c) AS a0, MAX(v) AS a1, "
                           "STDDEV_POP(c) AS a2, MIN(a) AS a3\n"
                           "FROM TABLE(TUMBLE(TABLE Sessions, DESCRIPTOR(window_time), INTERVAL '30' MINUTES))\n"
                           "GROUP BY supplier_id, window_start, window_end",
        "select": "SELECT supplier_id, window_start, window_end, AVG(qty) * 2 AS a0, "
                  "CAST(CAST(AVG(qty) AS DOUBLE) / 2 AS INT) AS a1, STDDEV_POP(qty) + 1 AS a2, "
                  f"VAR_POP(qty) - AVG(qty) AS a3\nFROM TABLE({WINDOWS['hop']})\n"
                  "GROUP BY supplier_id, window_start, window_end",
    }, "double"),
    # A window over DECIMAL results of 38 digits: the gate let SUM(m) through, and the job refused
    # it as it started ("its state keeps 18 decimal places"): the analyzer did not type an
    # aggregate's result read by a cascade; it keeps the scale the engine writes it at. So of an
    # AVG of arithmetic (``price / 4``, a DECIMAL(21, 13): its AVG a DECIMAL(38, 13)), which sqlglot
    # types without digits: the gate placed SUM(q) at 6 places (found by fuzzing).
    "wide_cascade": ({
        "cascade": "CREATE TEMPORARY VIEW WideTumbled AS\nSELECT supplier_id, window_time, "
                   "MAX(DISTINCT CAST(price / 1000.0 AS DECIMAL(38, 36))) AS m, AVG(CAST(price AS DECIMAL(38, 20))) AS a, "
                   "SUM(CAST(price AS DECIMAL(38, 2)) * 1000000000000000000) FILTER (WHERE qty > 20) AS s, "
                   "AVG(price / 4) AS q\n"
                   f"FROM TABLE({WINDOWS['tumble']})\nGROUP BY supplier_id, window_start, window_end, window_time;\n"
                   "SELECT supplier_id, window_start, window_end,\n  SUM(m) AS a0, MAX(a) AS a1, "
                   "SUM(s) FILTER (WHERE s > 0) AS a2, AVG(m) AS a3, MIN(a) FILTER (WHERE m > 0.1) AS a4, "
                   "SUM(q) AS a5, MAX(q) FILTER (WHERE q > 50) AS a6\n"
                   "FROM TABLE(HOP(TABLE WideTumbled, DESCRIPTOR(window_time), INTERVAL '10' MINUTES, INTERVAL '30' MINUTES))\n"
                   "GROUP BY supplier_id, window_start, window_end",
    }, "exact"),
}
#: Families over bids whose INTs reach their type's bounds now and then.
EXTREMES = ("overflow", "downstream", "large_variance", "reduced_means")
#: Families over bids whose group key is NULL now and then.
NULL_KEYS = ("null_keys",)
#: Families whose results are arrays: Flink's ``collect()`` cannot carry an array with a NULL element
#: to Python ("Ran out of input"), so Flink's side casts each to text ("[1.50, NULL, 2.50]") and the
#: test writes stategate's arrays as Flink casts them.
AS_TEXT = ("arrays", "distinct_arrays")
#: Calls Flink 2.3 runs over TUMBLE windows only: their functions have no merge, which slices
#: and sessions need ("Could not find an implementation method 'merge'"), or, SUM(DISTINCT), no
#: retraction. stategate runs them over every window kind.
TUMBLE_ONLY = ("FIRST_VALUE", "LAST_VALUE", "JSON_ARRAYAGG", "SUM(DISTINCT")
#: Calls Flink 2.3 refuses over HOP windows alone ("This function does not support retraction").
NOT_HOP = ("LISTAGG(DISTINCT",)
#: ... and so an AVG(DISTINCT) in a query with a STDDEV or VARIANCE, which its planner computes as a
#: SUM(DISTINCT) over a COUNT(DISTINCT) (``reduced_means``).
NOT_HOP_REDUCED, SPREADS = ("AVG(DISTINCT",), ("STDDEV", "VAR")


def bids(seed: int, count: int, span_s: int = 7200, extremes: bool = False, null_keys: bool = False) -> list[str]:
    """Random bids over ``span_s`` seconds and four suppliers, every value column NULL now and then,
    in event-time order with small disorder (within the watermark's delay): where bids are less than
    a second apart, some arrive after a later one. With ``extremes``, a tenth of the quantities are
    an INT's largest or smallest; with ``null_keys``, a tenth of the suppliers are NULL."""
    rng = random.Random(seed)
    start = datetime(2020, 4, 15, 8, 0)
    lines = []
    for i in range(count):
        at = start + timedelta(seconds=i * span_s // count + rng.randint(0, 1))
        price = "" if rng.random() < 0.1 else f"{rng.uniform(-5, 500):.2f}"
        qty = "" if rng.random() < 0.1 else str(rng.randint(-10, 100))
        if extremes and rng.random() < 0.1:
            qty = str(rng.choice((2 ** 31 - 1, -2 ** 31)))
        score = "" if rng.random() < 0.1 else repr(rng.uniform(-1, 1) * 10 ** rng.randint(-3, 3))
        supplier = "" if null_keys and rng.random() < 0.1 else f"s{rng.randint(1, 4)}"
        lines.append(f"{at:%Y-%m-%d %H:%M:%S}.000,{price},{qty},{score},{supplier}")
    return lines + [CLOSER]


def queries(family: str, as_text: bool = False) -> dict[str, str]:
    """Each window kind's query: every call of the family over every aggregated column that Flink
    runs over the kind; ``as_text``: each call cast to STRING (:data:`AS_TEXT`)."""
    if family in SHAPES:
        return dict(SHAPES[family][0])
    found = {}
    calls_of, _, columns = FAMILIES[family]
    not_hop = NOT_HOP + (NOT_HOP_REDUCED if any(call.startswith(SPREADS) for call in calls_of) else ())
    for kind, window in WINDOWS.items():
        calls = list(dict.fromkeys(call.format(c=c) for c in columns for call in calls_of
                                   if (kind == "tumble" or not call.startswith(TUMBLE_ONLY))
                                   and (kind != "hop" or not call.startswith(not_hop))))
        if not calls:
            continue
        select = ",\n  ".join((f"CAST({call} AS STRING)" if as_text else call) + f" AS a{i}"
                               for i, call in enumerate(calls))
        found[kind] = (f"SELECT supplier_id, window_start, window_end,\n  {select}\nFROM TABLE({window})\n"
                       "GROUP BY supplier_id, window_start, window_end")
    return found


def run_flink(lines: list[str], sql: dict[str, str]) -> dict[str, list[list]]:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    found = {}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bids.csv").write_text("\n".join(lines) + "\n")
        env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        env.get_config().set("parallelism.default", "1")
        env.get_config().set("table.local-time-zone", "UTC")
        # One phase, as Flink's planner runs a window aggregation without its local-global split
        # (AUTO, the default, splits it where every function merges). The local aggregation hands
        # on a partial state per key, slice and bundle of rows (a bundle ends where the watermark
        # passes a slice's end); LISTAGG's merge takes the separator of the partial it merges in
        # (``ListAggFunction``), and a partial of a bundle whose rows its FILTER all dropped keeps
        # the initial ",": a HOP or CUMULATE window then joins that slice's values to the next
        # slice's with "," instead of the separator written (the ``separators`` fixture: 7 HOP and
        # 12 CUMULATE windows). Which windows show it depends on when watermarks came; in one
        # phase each has its separator. Recorded again in one phase, the other fixtures changed
        # only where their comparison allows: a DOUBLE's last bits, a DISTINCT list's order.
        env.get_config().set("table.optimizer.agg-phase-strategy", "ONE_PHASE")
        env.execute_sql(f"CREATE TABLE Bid ({COLUMNS}, WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) "
                        f"WITH ('connector' = 'filesystem', 'path' = '{folder}', 'format' = 'csv', "
                        "'csv.null-literal' = '')")
        for kind, script in sql.items():
            *views, query = script.split(";\n")
            for view in views:
                env.execute_sql(view)
            with env.execute_sql(query).collect() as rows:
                found[kind] = sorted(_final_rows(rows), key=_nulls_first)
    return found


def _final_rows(rows: Iterable[Any]) -> list[list]:
    """The rows a query leaves in its sink, but the closer's: its changelog applied. A window
    aggregation or a window join only inserts, but where Flink plans a regular join instead (an
    outer join of windows whose specs differ, ``docs/pages/sql.md``) it inserts a row padded with
    NULLs and deletes it when its match arrives: recorded as two rows, that row would be expected
    twice."""
    from pyflink.common import RowKind

    kept: Counter[tuple] = Counter()
    for row in rows:
        if row[0] == "closer":
            continue
        values = tuple(_text(v) for v in row)
        if row.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            kept[values] += 1
        else:
            kept[values] -= 1
    unwritten = [values for values, count in kept.items() if count < 0]
    if unwritten:
        raise RuntimeError(f"Flink deleted a row it had not written: {unwritten[0]}")
    return [list(values) for values in kept.elements()]


def _nulls_first(row: list) -> list[tuple[bool, object]]:
    """A row's sort key: NULLs first in each column, other values in their own order."""
    return [(value is not None, 0 if value is None else value) for value in row]


def _text(value: object) -> object:
    """A value as the fixture keeps it: doubles as numbers, NULL as None, a MULTISET by
    :func:`multiset_text`, a time as Python writes one, the rest as Flink prints it."""
    if value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, dict):
        return multiset_text(value)
    if isinstance(value, datetime):  # as Python writes one: its microseconds where it has any
        return str(value)
    return str(value)


def multiset_text(counts: dict) -> str:
    """A MULTISET (value → count) as text, values in order: Flink hands one over in its hash map's
    order, which no other engine shares."""
    return "{" + ", ".join(f"{value}={count}" for value, count in sorted(counts.items())) + "}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("family", choices=sorted(FAMILIES.keys() | SHAPES.keys()))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bids", type=int, default=600)
    parser.add_argument("--span", type=int, default=7200, help="seconds of event time the bids cover")
    args = parser.parse_args(argv)
    import pyflink

    lines = bids(args.seed, args.bids, args.span, extremes=args.family in EXTREMES,
                 null_keys=args.family in NULL_KEYS)
    sql = queries(args.family)
    fixture = {
        "command": f"benchmarks/flink_oracle.py {args.family} --seed {args.seed} --bids {args.bids} --span {args.span}",
        "flink": pyflink.version.__version__,
        "compare": (FAMILIES | SHAPES)[args.family][1],
        "columns": COLUMNS,
        "input": lines,
        "queries": sql,
        "rows": run_flink(lines, queries(args.family, as_text=True) if args.family in AS_TEXT else sql),
    }
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = FIXTURES / f"{args.family}.json"
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"{out}: " + ", ".join(f"{kind} {len(rows)} rows" for kind, rows in fixture["rows"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

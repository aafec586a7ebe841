"""Aggregates equal to Flink's, row for row: each fixture of ``tests/data/flink/`` holds random bids
(NULLs among them), window queries over every window kind, and the rows Flink 2.3 gave for them
(recorded by ``benchmarks/flink_oracle.py``, whose command each fixture names). stategate runs the
same queries on the same bids and must give the same windows with the same values: to the last
digit where Flink computes exactly (``"compare": "exact"``); a DOUBLE within a relative 1e-9 (a sum
of doubles depends on the order it adds them in); where Flink computes in DOUBLE whatever the
argument's type (``"double"``: STDDEV, VARIANCE), within one unit of the result's last digit once
cast to an INT or a DECIMAL, or past a DOUBLE's 15 significant digits within a relative 1e-14;
where both compute in DOUBLE, each its own way (``"floating"``: Flink's running mean, stategate's
sums, over DECIMALs too wide for exact squares), as DOUBLEs. FIRST_VALUE, LAST_VALUE and LISTAGG follow arrival order
(``ordered``): a value out of place is a difference."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from stategate.spark_jobs.lifecycle import JobFailed
from tests.spark_jobs.flink_fixtures import FIXTURES, assert_equals_flink, ddl, fixtures, run_fixture
from tests.spark_jobs.helpers import collect_pipelines


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda p: p.stem)
def test_every_window_kind_equals_flink(spark, tmp_path, fixture: Path) -> None:
    recorded = json.loads(fixture.read_text())
    rows, kinds, pipelines = run_fixture(spark, recorded, tmp_path)
    assert_equals_flink(recorded, rows, kinds, pipelines)


@pytest.mark.parametrize("bids, message", [
    (["2020-04-15 08:01:00.000,2.00,1,0.5,s1", "2020-04-15 08:02:00.000,3.00,1,0.5,s1"],
     "key '1' is already present"),
    (["2020-04-15 08:01:00.000,2.00,,0.5,s1"], "a key is NULL"),
    (["2020-04-15 08:01:00.000,2.00,7,0.5,s1", "2020-04-15 08:02:00.000,3.00,,0.5,s1"], "a key is NULL"),
], ids=["key-twice", "null-key", "null-key-after-another"])
def test_a_json_object_that_flink_cannot_build_fails_the_job_as_it_fails_flink(spark, tmp_path, bids: list[str],
                                                                             message: str) -> None:
    """Flink fails a JSON_OBJECTAGG whose window holds a key twice ("Key '1' is already present.
    Duplicate keys are not allowed in JSON_OBJECTAGG") or a NULL key ("Map views don't support
    null keys"); so does the job, naming the aggregate, rather than write a JSON object Flink
    would not."""
    objects = json.loads((FIXTURES / "objects.json").read_text())
    source = tmp_path / "bids"
    source.mkdir()
    (source / "0-bids.csv").write_text("\n".join([*bids, objects["input"][-1]]) + "\n")
    sql = ddl(objects, source) + ("SELECT supplier_id, window_start, window_end, "
                                   "JSON_OBJECTAGG(KEY CAST(qty AS STRING) VALUE price) AS a0 "
                                   "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) "
                                   "GROUP BY supplier_id, window_start, window_end")
    with pytest.raises(JobFailed, match=f"JSON_OBJECTAGG.*{message}"):
        collect_pipelines(spark, sql, tmp_path / "checkpoint", ["select#1"])


#: Conditions on the ``basic`` fixture's results, each with the rows of Flink's it keeps: a HAVING
#: with an aggregate only it reads (COUNT(*), true of every window Flink emits: it must be kept in
#: state to be read at all); the same condition as a WHERE over the aggregation's rows, read from
#: a view; and a HAVING of an aggregation of whole windows (each window's largest COUNT(qty)).
CONDITIONS = {
    "having": (lambda kind, query: f"{query}\nHAVING COUNT(qty) > 10 AND MAX(price) > 400 AND COUNT(*) >= 1",
               lambda rows: [row for row in rows if row[3 + 10] > 10 and Decimal(row[3 + 4]) > 400]),
    "where": (lambda kind, query: f"CREATE TEMPORARY VIEW {kind}_windows AS {query};\n"
                                  f"SELECT * FROM {kind}_windows WHERE a10 > 10 AND a4 > 400",
              lambda rows: [row for row in rows if row[3 + 10] > 10 and Decimal(row[3 + 4]) > 400]),
    "whole": (lambda kind, query: f"CREATE TEMPORARY VIEW {kind}_each AS {query};\n"
                                  f"SELECT 'all', window_start, window_end, MAX(a10) AS most FROM {kind}_each "
                                  "GROUP BY window_start, window_end HAVING MAX(a10) > 12",
              lambda rows: [["all", *window, most] for window, most in _most(rows).items() if most > 12]),
}


def _most(rows: list[list]) -> dict[tuple, int]:
    """Each window's largest COUNT(qty) (column a10) over its suppliers' rows."""
    most: dict[tuple, int] = {}
    for row in rows:
        most[tuple(row[1:3])] = max(most.get(tuple(row[1:3]), 0), row[3 + 10])
    return most


def test_a_condition_on_the_results_keeps_the_windows_that_pass_it_on_every_window_kind(spark, tmp_path) -> None:
    """Flink runs a HAVING, and a WHERE over a window aggregation's rows, as a Calc after its window
    aggregate: the windows of the query without it whose results pass (COUNT(qty) is column a10,
    MAX(price) a4)."""
    basic = json.loads((FIXTURES / "basic.json").read_text())
    kept = {**basic, "queries": {}, "rows": {}}
    for form, (query, keep) in CONDITIONS.items():
        for kind in basic["queries"]:
            kept["queries"][f"{kind} {form}"] = query(kind, basic["queries"][kind])
            kept["rows"][f"{kind} {form}"] = keep(basic["rows"][kind])
            assert 0 < len(kept["rows"][f"{kind} {form}"]) < len(_most(basic["rows"][kind]) if form == "whole"
                                                                 else basic["rows"][kind]), \
                f"{kind} {form}: the condition keeps some windows and drops others"
    rows, kinds, pipelines = run_fixture(spark, kept, tmp_path)
    assert_equals_flink(kept, rows, kinds, pipelines)

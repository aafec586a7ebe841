"""Aggregates equal to Flink's, row for row: each fixture of ``tests/data/flink/`` holds random bids
(NULLs among them), window queries over every window kind, and the rows Flink 2.3 gave for them
(recorded by ``benchmarks/flink_oracle.py``, whose command each fixture names). stategate runs the
same queries on the same bids and must give the same windows with the same values: to the last
digit where Flink computes exactly (``"compare": "exact"``); a DOUBLE within a relative 1e-9 (a sum
of doubles depends on the order it adds them in); where Flink computes in DOUBLE whatever the
argument's type (``"double"``: STDDEV, VARIANCE), within one unit of the result's last digit once
cast to an INT or a DECIMAL, or past a DOUBLE's 15 significant digits within a relative 1e-14. FIRST_VALUE, LAST_VALUE and LISTAGG follow arrival order
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


#: A HAVING over the ``basic`` fixture's results, with an aggregate only it reads (COUNT(*), true
#: of every window Flink emits: it must be kept in state to be read at all); and the same condition
#: as a WHERE over the aggregation's rows, read from a view.
CONDITIONS = {
    "having": lambda kind, query: f"{query}\nHAVING COUNT(qty) > 10 AND MAX(price) > 400 AND COUNT(*) >= 1",
    "where": lambda kind, query: f"CREATE TEMPORARY VIEW {kind}_windows AS {query};\n"
                                 f"SELECT * FROM {kind}_windows WHERE a10 > 10 AND a4 > 400",
}


@pytest.mark.parametrize("written", CONDITIONS)
def test_a_condition_on_the_results_keeps_the_windows_that_pass_it_on_every_window_kind(spark, tmp_path,
                                                                                        written: str) -> None:
    """Flink runs a HAVING, and a WHERE over a window aggregation's rows, as a Calc after its window
    aggregate: the windows of the query without it whose COUNT(qty) (column a10) and MAX(price)
    (a4) pass."""
    basic = json.loads((FIXTURES / "basic.json").read_text())
    kept = {**basic, "queries": {kind: CONDITIONS[written](kind, query) for kind, query in basic["queries"].items()},
            "rows": {kind: [row for row in rows if row[3 + 10] > 10 and Decimal(row[3 + 4]) > 400]
                     for kind, rows in basic["rows"].items()}}
    assert all(0 < len(kept["rows"][kind]) < len(basic["rows"][kind]) for kind in basic["rows"]), \
        "the condition keeps some windows of every kind and drops others"
    rows, kinds, pipelines = run_fixture(spark, kept, tmp_path)
    assert_equals_flink(kept, rows, kinds, pipelines)

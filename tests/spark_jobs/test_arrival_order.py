"""Arrival order across micro-batches, a restart and every file format: FIRST_VALUE, LAST_VALUE and
LISTAGG keep each value with where it arrived from (the file's modification time, its path, the
row's line), so neither how the rows were cut into micro-batches nor a restart between them
changes a value. The bids of ``tests/data/flink/ordered.json`` (43 of them arrive after a later
bid of their supplier) come in four files, one a micro-batch, the job stopped after the second: the
rows equal Flink's, which read them in one go. HOP and CUMULATE windows, whose slices also pass
through the slice log (``test_flink_equality`` runs every kind in one go)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from benchmarks.flink_oracle import WINDOWS
from tests.spark_jobs.flink_fixtures import assert_equals_flink, ddl, queries, recorded
from tests.spark_jobs.helpers import collect_pipelines

FILES = 4
FIELDS = ("bidtime", "price", "qty", "score", "supplier_id")


def as_json(line: str) -> str:
    values = dict(zip(FIELDS, line.split(",")))
    return json.dumps({k: (v if k in ("bidtime", "supplier_id") else json.loads(v)) for k, v in values.items() if v})


def write(spark, source: Path, name: str, lines: list[str], fmt: str, modified: int) -> None:
    """``lines`` (the fixture's CSV) as one file of ``fmt``, modified at ``modified``; a Parquet
    file is written by Spark from the CSV in one task, so its rows keep their order."""
    path = source / f"{name}.{fmt}"
    staging = source.parent / f"staging-{name}"
    staging.mkdir()
    if fmt == "json":
        (staging / "f").write_text("".join(as_json(line) + "\n" for line in lines))
    else:
        (staging / "f").write_text("\n".join(lines) + "\n")
    if fmt == "parquet":
        columns = recorded("ordered")["columns"].replace("TIMESTAMP(3)", "TIMESTAMP")  # as Spark spells it
        spark.read.schema(columns).csv(str(staging / "f")).coalesce(1).write.parquet(str(staging / "p"))
        next((staging / "p").glob("part-*.parquet")).rename(staging / "f")
    shutil.move(staging / "f", path)
    shutil.rmtree(staging)
    os.utime(path, (modified, modified))


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_arrival_order_survives_micro_batches_a_restart_and_every_format(spark, tmp_path, fmt: str) -> None:
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
            write(spark, source, f"{index}-bids", files[index], fmt, 1_600_000_000 + index)
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

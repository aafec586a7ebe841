"""Aggregates equal to Flink's, row for row: each fixture of ``tests/data/flink/`` holds random bids
(NULLs among them), window queries over every window kind, and the rows Flink 2.3 gave for them
(recorded by ``benchmarks/flink_oracle.py``, whose command each fixture names). stategate runs the
same queries on the same bids and must give the same windows with the same values: to the last
digit where Flink computes exactly (``"compare": "exact"``); a DOUBLE within a relative 1e-9 (a sum
of doubles depends on the order it adds them in); where Flink computes in DOUBLE whatever the
argument's type (``"double"``: STDDEV, VARIANCE), within one unit of the result's last digit once
cast to an INT or a DECIMAL. FIRST_VALUE, LAST_VALUE and LISTAGG follow arrival order
(``ordered``): a value out of place is a difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.spark_jobs.flink_fixtures import assert_equals_flink, ddl, fixtures, queries
from tests.spark_jobs.helpers import collect_pipelines


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda p: p.stem)
def test_every_window_kind_equals_flink(spark, tmp_path, fixture: Path) -> None:
    recorded = json.loads(fixture.read_text())
    source = tmp_path / "bids"
    source.mkdir()
    *bids, closer = recorded["input"]
    (source / "0-bids.csv").write_text("\n".join(bids) + "\n")
    (source / "9-closer.csv").write_text(closer + "\n")
    script, kinds, pipelines = queries(recorded)
    rows, _ = collect_pipelines(spark, ddl(recorded, source) + script, tmp_path / "checkpoint", pipelines)
    assert_equals_flink(recorded, rows, kinds, pipelines)

"""Aggregates equal to Flink's, row for row: each fixture of ``tests/data/flink/`` holds random bids
(NULLs among them), window queries over every window kind, and the rows Flink 2.3 gave for them
(recorded by ``benchmarks/flink_oracle.py``, whose command each fixture names). stategate runs the
same queries on the same bids and must give the same windows with the same values: to the last
digit where Flink computes exactly (``"compare": "exact"``); a DOUBLE within a relative 1e-9 (a sum
of doubles depends on the order it adds them in); where Flink computes in DOUBLE whatever the
argument's type (``"double"``: STDDEV, VARIANCE), within one unit of the result's last digit once
cast to an INT or a DECIMAL."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path

import pytest

from tests.spark_jobs.helpers import collect_pipelines

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "flink"


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def same(ours: object, flink: object, compare: str) -> bool:
    if isinstance(flink, float) and isinstance(ours, float):  # summed in another order
        return (math.isnan(flink) and math.isnan(ours)) or math.isclose(ours, flink, rel_tol=1e-9)
    if compare == "exact" or ours is None or flink is None or type(ours) is not type(flink):
        return ours == flink
    if isinstance(flink, int):
        assert isinstance(ours, int)
        return abs(ours - flink) <= 1
    mine, theirs = Decimal(str(ours)), Decimal(str(flink))
    exponent = int(theirs.as_tuple().exponent)
    return int(mine.as_tuple().exponent) == exponent and abs(mine - theirs) <= Decimal(1).scaleb(exponent)


def text(value: object) -> object:
    """A Spark value as the fixture keeps Flink's: numbers as numbers, the rest as text."""
    if value is None or isinstance(value, (int, float)):
        return value
    return str(value)


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda p: p.stem)
def test_every_window_kind_equals_flink(spark, tmp_path, fixture: Path) -> None:
    recorded = json.loads(fixture.read_text())
    source = tmp_path / "bids"
    source.mkdir()
    *bids, closer = recorded["input"]
    (source / "0-bids.csv").write_text("\n".join(bids) + "\n")
    (source / "9-closer.csv").write_text(closer + "\n")
    ddl = (f"CREATE TABLE Bid ({recorded['columns']},\n  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND\n)"
           f" WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv');\n")
    kinds = list(recorded["queries"])
    pipelines = [f"select#{i}" for i in range(1, len(kinds) + 1)]
    rows, _ = collect_pipelines(spark, ddl + "".join(recorded["queries"][k] + ";\n" for k in kinds),
                                tmp_path / "checkpoint", pipelines)
    for kind, pipeline in zip(kinds, pipelines):
        ours = {tuple(map(text, row[:3])): [text(v) for v in row[3:]] for row in rows[pipeline]}
        flink = {tuple(row[:3]): row[3:] for row in recorded["rows"][kind]}
        assert sorted(ours) == sorted(flink), f"{kind}: the same windows"
        for window, values in flink.items():
            differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours[window], values))
                      if not same(a, b, recorded["compare"])]
            assert not differ, f"{kind} {window}: (column, stategate, Flink) {differ}"

"""Flink's recorded answers (``tests/data/flink/``, written by ``benchmarks/flink_oracle.py``) and
how stategate's rows are held against them."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy

from benchmarks.flink_oracle import multiset_text

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "flink"


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.json"))


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def ddl(fixture: dict[str, Any], source: Path, fmt: str = "csv", options: str = "") -> str:
    """The fixture's Bid table over ``source``, as the oracle declared it to Flink."""
    return (f"CREATE TABLE Bid ({fixture['columns']},\n  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND\n)"
            f" WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = '{fmt}'{options});\n")


def queries(fixture: dict[str, Any], kinds: tuple[str, ...] = ()) -> tuple[str, list[str], list[str]]:
    """The fixture's queries (of ``kinds``, else all) as one script, their window kinds, and their
    pipelines' names."""
    kinds = [k for k in fixture["queries"] if not kinds or k in kinds]
    return ("".join(fixture["queries"][k] + ";\n" for k in kinds), kinds,
            [f"select#{i}" for i in range(1, len(kinds) + 1)])


#: The relative error of a value Flink computes in DOUBLE (15 significant digits, with Welford's
#: algorithm's rounding on the way).
DOUBLE_DIGITS = Decimal("1e-14")


#: The fixtures' jobs keep their state in one partition, as the oracle ran Flink: a window's values
#: do not depend on how keys are spread over partitions, which the rest of the suite runs at the
#: default 4 (rescaled, crashed, re-seeded), and each micro-batch costs a quarter of the state tasks
#: (six fixtures: 64 s against 83 s).
ONE_PARTITION = "SET 'parallelism.default' = '1';\n"


def run_fixture(spark: Any, fixture: dict[str, Any], work: Path) -> tuple[dict[str, list], list[str], list[str]]:
    """stategate's rows for each of the fixture's queries, over its bids written under ``work`` (the
    closing bid a file of its own), with the queries' window kinds and pipelines' names."""
    from tests.spark_jobs.helpers import collect_pipelines

    source = work / "bids"
    source.mkdir()
    *bids, closer = fixture["input"]
    (source / "0-bids.csv").write_text("\n".join(bids) + "\n")
    (source / "9-closer.csv").write_text(closer + "\n")
    script, kinds, pipelines = queries(fixture)
    rows, _ = collect_pipelines(spark, ONE_PARTITION + ddl(fixture, source) + script, work / "checkpoint", pipelines)
    return rows, kinds, pipelines


def same(ours: object, flink: object, compare: str) -> bool:
    if isinstance(flink, float) and isinstance(ours, float):  # summed in another order
        return (math.isnan(flink) and math.isnan(ours)) or math.isclose(ours, flink, rel_tol=1e-9) \
            or float(str(numpy.float32(ours))) == flink  # a FLOAT: PyFlink hands over Java's Float.toString
    if compare == "floating" and ours is not None and flink is not None \
            and math.isclose(float(ours), float(flink), rel_tol=1e-9):  # both in DOUBLE, each its own way
        return True  # (else held as ``double`` is: an INT's variance within one, a DECIMAL's last digit)
    if compare == "sets" and isinstance(ours, str) and isinstance(flink, str):
        return elements(ours) == elements(flink)
    if compare == "exact" or ours is None or flink is None or type(ours) is not type(flink):
        return ours == flink
    if isinstance(flink, int):  # past a DOUBLE's 15 significant digits (2^53), a relative 1e-14
        assert isinstance(ours, int)
        return abs(ours - flink) <= max(1, abs(flink) * DOUBLE_DIGITS)
    # Computed in DOUBLE by Flink, then cast: one unit of the last digit, or past a DOUBLE's 15
    # significant digits (a variance of 6466916887.352265 at DECIMAL(38, 6)), a few of its own.
    mine, theirs = Decimal(str(ours)), Decimal(str(flink))
    exponent = int(theirs.as_tuple().exponent)
    return int(mine.as_tuple().exponent) == exponent \
        and abs(mine - theirs) <= max(Decimal(1).scaleb(exponent), abs(theirs) * DOUBLE_DIGITS)


def elements(listed: str) -> list[str]:
    """The values of a list as text (``[1, NULL]``, ``1,2``, ``a;b``, a MULTISET's ``{1=1}``), in
    order: the fixtures' values hold no separator."""
    return sorted(re.split(r"[,;] ?", listed.strip("[]{}")))


def text(value: object) -> object:
    """A Spark value as the fixture keeps Flink's: numbers as numbers, an array as Flink casts one
    to text (``benchmarks/flink_oracle.py``, ``AS_TEXT``), a map as the oracle writes a MULTISET,
    the rest as text."""
    if value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(_cast_to_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return multiset_text(value)
    return str(value)


def _cast_to_text(value: object) -> str:
    """An array's element as Flink's CAST to text writes it: a BOOLEAN in capitals, a
    TIMESTAMP(3) (the fixtures' only time) with its milliseconds."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(value).upper()
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}.{value.microsecond // 1000:03d}"
    return str(value)


def assert_equals_flink(fixture: dict[str, Any], rows: dict[str, list], kinds: list[str], pipelines: list[str]) -> None:
    """Each kind's windows, and each of their values, are Flink's."""
    for kind, pipeline in zip(kinds, pipelines):
        ours = {tuple(map(text, row[:3])): [text(v) for v in row[3:]] for row in rows[pipeline]}
        assert len(ours) == len(rows[pipeline]), f"{kind}: each window once"
        flink = {tuple(row[:3]): row[3:] for row in fixture["rows"][kind]}
        assert set(ours) == set(flink), f"{kind}: the same windows (only stategate's: " \
            f"{sorted(set(ours) - set(flink))[:3]}; only Flink's: {sorted(set(flink) - set(ours))[:3]})"
        for window, values in flink.items():
            differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours[window], values))
                      if not same(a, b, fixture["compare"])]
            assert not differ, f"{kind} {window}: (column, stategate, Flink) {differ}"

"""Running job SQL in tests: real streaming queries on real files, results collected per batch."""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import Counter
from pathlib import Path

from stategate.spark_jobs.job import RunResult, run

DATA = Path(__file__).resolve().parents[1] / "data"

BID_COLUMNS = "bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING, supplier_id STRING"
#: A bid far after the seed's data: its watermark closes every seed window, and it opens none of them.
CLOSER = "2020-04-16 00:00:00,0.00,Z,closer\n"


def bid_ddl(path: Path, name: str = "Bid", delay: str = "INTERVAL '1' SECOND", options: str = "") -> str:
    return (f"CREATE TABLE {name} ({BID_COLUMNS},\n  WATERMARK FOR bidtime AS bidtime - {delay}\n)"
            f" WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv'{options});\n")


def recorded_checkpoint(name: str, tmp_path: Path) -> tuple[Path, str]:
    """The checkpoint an earlier release wrote (``tests/data/checkpoints/<name>``) put where the
    test runs, and its job's SQL there. Its paths are recorded as ``@ROOT@`` (the source's file log
    and the job's SQL), put back as ``tmp_path``; Hadoop's ``.crc`` files are left out."""
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(DATA / "checkpoints" / name, checkpoint)
    query = next(p for p in checkpoint.iterdir() if p.name != "_stategate")
    for path in (query / "sources" / "0" / "0", checkpoint / "_stategate" / "job.sql"):
        path.write_text(path.read_text().replace("@ROOT@", str(tmp_path)))
    return checkpoint, (checkpoint / "_stategate" / "job.sql").read_text()


def write_recorded(checkpoint: Path, path: Path, text: str) -> None:
    """Write the file ``path`` that the recorded ``checkpoint`` read (its first source file),
    modified when the checkpoint was recorded, as a file it read is: Spark's file source forgets a
    file modified more than ``maxFileAge`` (7 days) before the newest it sees, so one written now
    would be read again, its rows twice, a week after the recording."""
    query = next(p for p in checkpoint.iterdir() if p.name != "_stategate")
    recorded_at = json.loads((query / "sources" / "0" / "0").read_text().splitlines()[-1])["timestamp"] / 1000
    path.write_text(text)
    os.utime(path, (recorded_at, recorded_at))


def seed_bids(tmp: Path, closing: bool = True) -> Path:
    """The seed 003 Bid table as a source directory (plus the closing bid)."""
    source = tmp / "bids"
    source.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "bids" / "bids.csv", source / "0-seed.csv")
    if closing:
        (source / "9-closer.csv").write_text(CLOSER)
    return source


def collect(spark, sql: str, checkpoint: Path, pipeline: str = "select#1", **options) -> list[tuple]:
    """Run ``sql`` to completion (available-now) and return the emitted rows as sorted tuples of text."""
    return collect_run(spark, sql, checkpoint, pipeline, **options)[0]


def collect_run(spark, sql: str, checkpoint: Path, pipeline: str = "select#1",
                **options) -> tuple[list[tuple], RunResult]:
    """:func:`collect`, and the run itself (its queries' progress)."""
    rows: list = []
    result = run(spark, sql, checkpoint, writers={pipeline: lambda df, _: rows.extend(df.collect())}, **options)
    return sorted(tuple("NULL" if v is None else str(v) for v in row) for row in rows), result


def collect_pipelines(spark, sql: str, checkpoint: Path, pipelines: list[str], **options) -> tuple[dict[str, list], RunResult]:
    """Run ``sql`` to completion (available-now) with every pipeline of ``pipelines`` collected:
    its emitted rows (Spark's Rows) by pipeline, and the run itself."""
    rows: dict[str, list] = {name: [] for name in pipelines}
    writers = {name: (lambda found: lambda df, _: found.extend(df.collect()))(rows[name]) for name in pipelines}
    return rows, run(spark, sql, checkpoint, writers=writers, **options)


def csv_sink_rows(folder: Path) -> Counter:
    """The rows a CSV file sink holds in ``folder``, each as often as it was written."""
    found: Counter = Counter()
    for part in folder.glob("part-*.csv"):
        with part.open(newline="") as handle:
            found.update(tuple(row) for row in csv.reader(handle))
    return found

"""Taking over from an archived checkpoint: the new version reads again only what its open windows need.

The plan (:mod:`analyzer.cutover`) says, per pipeline, the cutover watermark W, the archived files
no open window needs, and ``W - span``. Here it is kept beside the new checkpoint and applied: the
source never opens the skipped files, rows older than ``W - span`` that a re-read file still holds
are dropped (:mod:`spark_jobs.compile`), and only windows ending after W reach the sink, so the
sink holds each window once across the redeploy.

Skipping a file takes two things. Spark's file source takes every file it has not logged as new,
``maxFilesPerTrigger`` at a time: a filter alone would still spend one micro-batch per skipped file
(a 48-hour history read one file per batch: 288 batches of nothing). So the new query's source log
starts with the skipped files as its entry 0 (:func:`seed_source_log`): the source counts them as
read and never lists them again. Its first batch still covers entry 0, and there the filter on
``_metadata.file_path`` (:func:`source_filter`) prunes them before any is opened.
"""

from __future__ import annotations

import json

from pyspark.sql import Column
from pyspark.sql import functions as F

from stategate.analyzer.cutover import Cutover
from stategate.spark_jobs import RECORD_DIR
from stategate.spark_jobs.storage import HadoopStorage

#: The record of a take-over beside the new checkpoint's state (``_stategate/take-over.json``).
RECORD = "take-over.json"


def record(storage: HadoopStorage, checkpoint: str, archived: str, policy: str, taken: dict[str, Cutover]) -> None:
    """Keep the take-over beside the new state, before its first batch: every later start of this
    checkpoint (a restart after a crash, a retried task) applies the same cutover, so it never
    emits a window the archived version emitted, nor reads what the take-over skipped."""
    storage.write_text(f"{checkpoint}/{RECORD_DIR}/{RECORD}", json.dumps({
        "archived": archived, "replay": policy,
        "pipelines": {name: cutover.to_dict() for name, cutover in taken.items()}}, indent=2))


def recorded(storage: HadoopStorage, checkpoint: str) -> tuple[str | None, dict[str, Cutover]]:
    """The archive this checkpoint took over from and its cutovers; (None, {}) if it took over from none."""
    path = f"{checkpoint}/{RECORD_DIR}/{RECORD}"
    if not storage.exists(path):
        return None, {}
    data = json.loads(storage.read_text(path))
    return data["archived"], {name: Cutover.from_dict(name, cut) for name, cut in data["pipelines"].items()}


def seed_source_log(storage: HadoopStorage, location: str, cutover: Cutover) -> None:
    """Log the skipped files as the new query's first source entry, before its first batch (and
    never once its source has a log: a restart keeps what Spark wrote). The entries are the
    archived log's own: the same paths and modification times, so the source matches them to what
    it lists, and its ``maxFileAge`` reckons from the same times as the old version's did."""
    first = f"{location}/sources/0/0"  # the first entry of the query's only source (a take-over reads one)
    if not cutover.skipped or storage.exists(first):
        return
    entries = (json.dumps({"path": path, "timestamp": mtime, "batchId": 0}) for path, mtime in cutover.skipped)
    storage.write_text(first, "\n".join(("v1", *entries)))


def source_filter(cutover: Cutover) -> Column | None:
    """The source's file filter: None when every file is read. Hadoop names a local file
    ``file:///x`` in the source log and ``file:/x`` in ``_metadata``: both are matched."""
    if not cutover.skipped:
        return None
    paths = {path for path, _ in cutover.skipped}
    paths |= {"file:/" + path.removeprefix("file:///") for path in paths if path.startswith("file:///")}
    return ~F.col("_metadata.file_path").isin(sorted(paths))

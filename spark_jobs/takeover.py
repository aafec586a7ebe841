"""Taking over from an archived checkpoint: the new version reads again only what its open windows need.

The plan (:mod:`spark_jobs.cutover`) says, per pipeline, the cutover watermark W, the archived files
no open window needs, and ``W - span``. It is kept beside the new checkpoint (``cutover.TakeOver``)
and applied: the source never opens the skipped files, rows older than ``W - span`` that a re-read
file still holds are dropped (:mod:`spark_jobs.compile`), and only windows ending after W reach the
sink, so the sink holds each window once across the redeploy.

Skipping a file takes two things. Spark's file source takes every file it has not logged as new,
``maxFilesPerTrigger`` at a time: a filter alone would still spend one micro-batch per skipped file
(a 48-hour history read one file per batch: 288 batches of nothing). So the new query's source log
starts with the skipped files as its entry 0 (``checkpoint.WritableCheckpoint.seed_source_log``,
with the archived log's own paths and modification times, so the source matches them to what it
lists and its ``maxFileAge`` reckons from the same times): the source counts them as read and never
lists them again. Its first batch still covers entry 0, and there the filter on
``_metadata.file_path`` (:func:`source_filter`) prunes them before any is opened.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from stategate.spark_jobs.cutover import Cutover


def source_filter(cutover: Cutover, source: int = 0) -> Column | None:
    """The file filter of the input source ``source`` (in branch order): None when every file is
    read. Hadoop names a local file ``file:///x`` in the source log and ``file:/x`` in
    ``_metadata``: both are matched."""
    skipped = cutover.skipped_by(source)
    if not skipped:
        return None
    paths = {path for path, _ in skipped}
    paths |= {"file:/" + path.removeprefix("file:///") for path in paths if path.startswith("file:///")}
    return ~F.col("_metadata.file_path").isin(sorted(paths))

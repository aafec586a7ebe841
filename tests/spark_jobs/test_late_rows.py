"""Late rows are dropped as Flink drops them, and never without a warning naming the batch."""

from __future__ import annotations

import logging
import os

from stategate.spark_jobs.late_rows import LateRows
from tests.spark_jobs.helpers import CLOSER, bid_ddl, collect_run

#: Read a file per micro-batch, in this order (modification times one second apart).
FILES = [
    "2020-04-15 08:05:00,4.00,C,s1\n2020-04-15 08:21:00,1.00,C,s1\n",  # batch 0; its watermark: 08:20:59
    "2020-04-15 08:22:00,2.00,A,s2\n",  # batch 1 closes [08:00, 08:10) with that watermark
    # batch 2: three records of the closed window, late by the watermark batch 1 ran with
    "2020-04-15 08:01:00,2.00,A,s1\n2020-04-15 08:02:00,2.00,A,s2\n2020-04-15 08:03:00,2.00,A,s2\n"
    "2020-04-15 08:23:00,2.00,A,s2\n",
    CLOSER,
]


def test_late_rows_are_dropped_and_told(spark, tmp_path, caplog) -> None:
    source = tmp_path / "bids"
    source.mkdir()
    for index, text in enumerate(FILES):
        path = source / f"{index}.csv"
        path.write_text(text)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    sql = (bid_ddl(source, options=", 'spark.maxFilesPerTrigger' = '1'")
           + "SELECT window_start, supplier_id, COUNT(*) AS bids FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
             "INTERVAL '10' MINUTES)) GROUP BY supplier_id, window_start, window_end;")
    with caplog.at_level(logging.WARNING, logger="stategate.late_rows"):
        rows, run = collect_run(spark, sql, tmp_path / "checkpoint")  # told before the job ends
    assert rows == [("2020-04-15 08:00:00", "s1", "1"), ("2020-04-15 08:20:00", "s1", "1"),
                    ("2020-04-15 08:20:00", "s2", "2")], "the window of 08:00 keeps only its on-time record"
    # Spark counts after its partial aggregation: s1's late record and s2's two are two groups.
    told = ("select#1: micro-batch 2 dropped 2 group(s) of late rows, each one or more input records whose window "
            "the watermark had closed (watermark now 2020-04-15T08:21:59.000Z)")
    assert [r.getMessage() for r in caplog.records] == [told]
    # A look after all the micro-batches (as after a pause of the driver) tells each one, once.
    caplog.clear()
    late = LateRows({"select#1": run.queries[0]})
    with caplog.at_level(logging.WARNING, logger="stategate.late_rows"):
        late.tell()
        late.tell()
    assert [r.getMessage() for r in caplog.records] == [told], "each micro-batch is told of once"

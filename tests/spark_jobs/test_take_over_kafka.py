"""A take-over whose source is a Kafka topic: where the new version's source starts (and an
interval join, which no source makes a take-over of).

No broker runs here (and no Maven repository serves the Kafka connector), so the archived
checkpoint is written as Spark's Kafka source leaves it (``offsets/<n>``: the batch's watermark,
then ``{"topic": {"partition": offset}}``) and the plan is read through the engine's own Hadoop
storage, down to the reader options the job hands Spark's Kafka source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stategate.analyzer.build import build
from stategate.spark_jobs.cutover import NONE, TakeOverRefused, cutovers, volumes
from stategate.analyzer.replay import DEFAULT_KAFKA_MARGIN_MS
from stategate.spark_jobs.connectors import kafka_source_options
from stategate.spark_jobs.storage import HadoopStorage

DDL = """CREATE TABLE Bid (bidtime TIMESTAMP(3), price BIGINT, item STRING,
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'bids', 'properties.bootstrap.servers' = 'broker:9092', 'format' = 'json');
CREATE TABLE S (item STRING, window_start TIMESTAMP(3), total BIGINT) WITH ('connector' = 'print');
"""
V1 = ("INSERT INTO S SELECT item, window_start, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
      "INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end;")
V2 = V1.replace("SELECT item,", "SELECT UPPER(item),").replace("GROUP BY item,", "GROUP BY UPPER(item),")
# Seven batches, ten minutes of bids each: batch n ran with the watermark the bids before it set,
# and read the topic's two partitions up to 100 (n + 1) and 50 (n + 1).
WATERMARKS = [0, 599_000, 1_199_000, 1_799_000, 2_399_000, 2_999_000, 3_599_000]


def archive(root: Path, kept: range = range(len(WATERMARKS))) -> Path:
    """An archived checkpoint of v1 as Spark leaves it, holding the offset and commit logs of ``kept``."""
    checkpoint = root / "archive"
    (checkpoint / "_stategate").mkdir(parents=True)
    (checkpoint / "_stategate" / "job.sql").write_text(DDL + V1)
    for folder in ("offsets", "commits", "sources/0"):
        (checkpoint / "S" / folder).mkdir(parents=True)
    (checkpoint / "S" / "sources" / "0" / "0").write_text('v1\n{"bids":{"0":0,"1":0}}')
    for n in kept:
        metadata = {"batchWatermarkMs": WATERMARKS[n], "batchTimestampMs": 1_700_000_000_000 + n, "conf": {}}
        offsets = {"bids": {"0": 100 * (n + 1), "1": 50 * (n + 1)}}
        (checkpoint / "S" / "offsets" / str(n)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offsets)}")
        (checkpoint / "S" / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return checkpoint


def test_starts_where_the_first_batch_with_a_needed_row_started(spark, tmp_path):
    """W is batch 6's watermark, 00:59:59; TUMBLE 10 min + 1 s delay reaches back to 00:49:58.
    Batch 3's bids are at most batch 4's watermark + delay (00:40:00): not needed. Batch 4's may be
    as late as 00:50:00: it is read again, so the source starts where batch 3 ended."""
    (cut,) = cutovers(HadoopStorage(spark), str(archive(tmp_path)), build(DDL + V2)).values()
    assert (cut.watermark_ms, cut.cutoff_ms) == (3_599_000, 3_599_000 - 601_000)
    assert dict(cut.source_options) == {"startingOffsets": '{"bids": {"0": 400, "1": 200}}'}
    assert cut.replayed == (700 - 400) + (350 - 200), "messages read again"
    options = kafka_source_options(build(DDL + V2).tables["Bid"], dict(cut.source_options))
    assert options["startingOffsets"] == '{"bids": {"0": 400, "1": 200}}' and options["subscribe"] == "bids"
    assert "re-reads 450 messages" in cut.describe()
    assert volumes(HadoopStorage(spark), str(tmp_path / "archive"), build(DDL + V2))["S"].messages == 450


def test_where_spark_pruned_the_offsets_it_starts_by_record_time_a_margin_earlier(spark, tmp_path):
    """Only batches 4 to 6 kept: where batch 3 ended is unknown, so the source starts by record
    timestamp, the margin before the cutoff, on every partition the old version read, and fails
    rather than start elsewhere (strategy error)."""
    checkpoint = str(archive(tmp_path, range(4, 7)))
    (cut,) = cutovers(HadoopStorage(spark), checkpoint, build(DDL + V2)).values()
    since = cut.cutoff_ms - DEFAULT_KAFKA_MARGIN_MS
    assert dict(cut.source_options) == {
        "startingOffsetsByTimestamp": json.dumps({"bids": {"0": since, "1": since}}),
        "startingOffsetsByTimestampStrategy": "error"}
    margin = "SET 'stategate.replay.kafka-margin' = '1 h';\n"
    (wider,) = cutovers(HadoopStorage(spark), checkpoint, build(margin + DDL + V2)).values()
    assert json.loads(dict(wider.source_options)["startingOffsetsByTimestamp"])["bids"]["0"] == \
        cut.cutoff_ms - 3_600_000


def test_replay_none_starts_where_the_old_version_stopped_and_a_long_span_from_the_startup_mode(spark, tmp_path):
    storage, checkpoint = HadoopStorage(spark), str(archive(tmp_path))
    (none,) = cutovers(storage, checkpoint, build(DDL + V2), NONE).values()
    assert dict(none.source_options) == {"startingOffsets": '{"bids": {"0": 700, "1": 350}}'}
    assert none.cutoff_ms is None, "nothing re-read, no row dropped"
    two_hours = V2.replace("INTERVAL '10' MINUTES", "INTERVAL '2' HOURS")
    (whole,) = cutovers(storage, checkpoint, build(DDL + two_hours)).values()
    assert whole.kafka and whole.source_options == (), "every batch may hold a needed row: the startup mode"
    assert whole.cutoff_ms == 3_599_000 - 7_201_000


def test_a_source_neither_files_nor_kafka_is_refused(spark, tmp_path):
    checkpoint = archive(tmp_path)
    offsets = checkpoint / "S" / "offsets" / "6"
    offsets.write_text(offsets.read_text().rsplit("\n", 1)[0] + "\n42")
    with pytest.raises(TakeOverRefused, match="neither a file source's nor a Kafka source's"):
        cutovers(HadoopStorage(spark), str(checkpoint), build(DDL + V2))


def test_an_interval_join_is_refused_before_the_deploy_and_at_the_take_over(spark, tmp_path):
    """Its rows have no window end to hold the seam by: refused by name, in the estimate the gate
    shows and when the take-over starts."""
    interval = ("INSERT INTO S SELECT B.item, M.window_end, B.price FROM Bid B JOIN (SELECT item, MAX(price) AS top, "
                "window_end FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) "
                "GROUP BY item, window_start, window_end) M ON B.item = M.item AND B.price = M.top "
                "WHERE B.bidtime BETWEEN M.window_end - INTERVAL '1' MINUTE AND M.window_end;")
    storage, checkpoint, model = HadoopStorage(spark), str(archive(tmp_path)), build(DDL + interval)
    assert "an interval join has no window end" in volumes(storage, checkpoint, model)["S"].refused
    with pytest.raises(TakeOverRefused, match="an interval join has no window end to hold the seam by"):
        cutovers(storage, checkpoint, model)

"""A job's SET statements reach Spark: its parallelism and state backend shape the checkpoint, a
static Spark setting is refused before anything is written, and the session keeps its own values."""

from __future__ import annotations

import json

import pytest

from stategate.analyzer import SQLModelError
from stategate.analyzer.settings import ROCKSDB, SHUFFLE_PARTITIONS, STATE_STORE
from stategate.spark_jobs.job import run
from stategate.spark_jobs.session import LOCAL_CHECKPOINT_CONF, checkpoint_conf
from tests.spark_jobs.helpers import bid_ddl, collect, seed_bids

QUERY = ("SELECT supplier_id, window_start, SUM(price) AS total FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
         "INTERVAL '10' MINUTES)) GROUP BY supplier_id, window_start, window_end")


def test_parallelism_and_state_backend_shape_the_checkpoint(spark, tmp_path) -> None:
    sql = bid_ddl(seed_bids(tmp_path)) + QUERY
    flink = ("SET 'parallelism.default' = '3';\nSET 'state.backend.type' = 'rocksdb';\n"
             "SET 'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled' = 'true';\n")
    rows = collect(spark, flink + sql, tmp_path / "checkpoint")
    query = tmp_path / "checkpoint" / "select#1"
    conf = json.loads((query / "offsets" / "0").read_text().splitlines()[1])["conf"]
    assert (conf[SHUFFLE_PARTITIONS], conf[STATE_STORE]) == ("3", ROCKSDB), "what Spark keeps for the checkpoint"
    assert sorted(p.name for p in (query / "state" / "0").iterdir() if p.name.isdigit()) == ["0", "1", "2"]
    assert list((query / "state" / "0" / "0").glob("*.changelog")), "RocksDB's own setting reached it"
    assert spark.conf.get(SHUFFLE_PARTITIONS) == "4", "the session keeps its own settings"
    assert rows == collect(spark, sql, tmp_path / "default"), "the same rows as with stategate's defaults"


@pytest.mark.parametrize("setting, problem", [
    ("spark.executor.memory' = '2g", "a setting Spark fixes when it starts.*spark-submit --conf spark.executor.memory=2g"),
    ("spark.sql.warehouse.dir' = '/tmp/w", "a setting Spark fixes when it starts.*--conf spark.sql.warehouse.dir=/tmp/w"),
    ("spark.sql.session.timeZone' = 'Europe/Paris", "stategate runs every job with spark.sql.session.timeZone = UTC"),
])
def test_a_setting_the_session_cannot_take_is_refused_before_anything_starts(spark, tmp_path, setting,
                                                                              problem) -> None:
    sql = f"SET '{setting}';\n" + bid_ddl(seed_bids(tmp_path)) + QUERY
    with pytest.raises(SQLModelError, match=problem):
        run(spark, sql, tmp_path / "checkpoint", writers={"select#1": lambda df, _: None})
    assert not (tmp_path / "checkpoint").exists()


def test_a_local_checkpoint_is_written_through_hadoop_s_file_system_unless_the_job_sets_its_own(spark, tmp_path) -> None:
    """Hadoop's FileContext starts a process for each rename on a local disk (``session.LOCAL_CHECKPOINT_CONF``)."""
    sql = bid_ddl(seed_bids(tmp_path)) + QUERY
    manager = "spark.sql.streaming.checkpointFileManagerClass"
    file_context = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"

    def started_with(script: str, checkpoint: str) -> str:
        [query] = run(spark, script, checkpoint, wait=False, writers={"select#1": lambda df, _: None}).queries
        try:
            return query._jsq.streamingQuery().sparkSessionForStream().conf().get(manager)  # its own session
        finally:
            query.stop()

    try:
        assert started_with(sql, str(tmp_path / "plain")) == LOCAL_CHECKPOINT_CONF[manager]
        assert started_with(sql, f"file://{tmp_path / 'uri'}") == LOCAL_CHECKPOINT_CONF[manager]
        # Held on the session while the job runs: Spark opens some checkpoint files later with its settings.
        assert spark.conf.get(manager) == LOCAL_CHECKPOINT_CONF[manager]
        assert started_with(f"SET '{manager}' = '{file_context}';\n" + sql, str(tmp_path / "own")) == file_context
    finally:
        spark.conf.unset(manager)
    assert checkpoint_conf("s3a://bucket/checkpoint") == checkpoint_conf("hdfs://nn/checkpoint") == {}, \
        "other file systems keep Spark's choice"

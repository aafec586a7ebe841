"""Always-on jobs through real Airflow on the Spark standalone cluster (issue 37).

A job of the example fleet runs all the time (``trigger: processing-time=1 seconds``, submitted
detached in client deploy mode) while bid files keep arriving:

* v1 is deployed; deployed again unchanged, it is left running;
* v2 adds MAX(price) (PARTIAL) and is redeployed while v1 runs: the gate judges it, the running job
  is stopped after the micro-batch it is in, v2 starts on the checkpoint, re-seeding its state (v1's
  layout has no room for MAX: ``spark_jobs/reseed.py``), and commits a micro-batch;
* a bad v2 (its MAX divides by zero: PARTIAL, re-seeding again, and it fails at its first
  micro-batch) does not become healthy: the redeploy rolls back by itself, v2 started again on its
  own state (the unused re-seed undone);
* v3 resizes the window (INCOMPATIBLE): v2 stopped, its state archived, v3 takes over;
* a bad v4 (INCOMPATIBLE, failing likewise) is rolled back by itself too: its checkpoint archived,
  v3's archived state restored, v3 started again;
* a rollback by hand (the DAG's ``rollback`` param) returns to v2: v3 stopped and archived, v2's
  archived state restored, v2 continues on it past v3's last window.

The sink then holds each window once, with what the verdicts promise: COUNT and SUM exact in every
window, MAX exact in the windows v2 saw whole, v3's windows between the two seams, v2's before and
after them; the failed versions wrote nothing.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from stategate.provider.hooks.deployment import DeploymentHook
from stategate.spark_jobs.checkpoint import AppState, Checkpoint, QueryLog
from stategate.spark_jobs.storage import LocalFiles
from tests.provider.conftest import fleet_dag, fleet_job
from tests.spark_jobs.helpers import BID_COLUMNS

START = datetime(2026, 3, 1, 9)
SUPPLIERS = ("s1", "s2", "s3")


def job_sql(data: Path, minutes: int, top: bool) -> str:
    return f"""
CREATE TABLE Bid ({BID_COLUMNS},
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{data}/incoming', 'format' = 'csv');
CREATE TABLE Totals (window_start TIMESTAMP(3), window_end TIMESTAMP(3), supplier_id STRING, bids BIGINT,
  total DECIMAL(38, 2), top DECIMAL(10, 2))
WITH ('connector' = 'filesystem', 'path' = '{data}/totals', 'format' = 'parquet');
INSERT INTO Totals
SELECT window_start, window_end, supplier_id, COUNT(*), SUM(price), {"MAX(price)" if top else "CAST(NULL AS DECIMAL(10, 2))"}
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{minutes}' MINUTES))
GROUP BY supplier_id, window_start, window_end;
"""


class Feeder(threading.Thread):
    """Writes a bid file every ``every`` seconds, each a minute of event time later than the last:
    the stream keeps arriving while redeploys happen."""

    def __init__(self, folder: Path, every: float = 1.5) -> None:
        super().__init__(daemon=True)
        self.folder, self.every, self.files = folder, every, 0
        self.halt = threading.Event()

    def write(self, minute: int, rows: list[str]) -> None:
        path = self.folder / f"bids-{minute:05d}.csv"
        path.write_text("\n".join(rows) + "\n")
        os.utime(path, (1_700_000_000 + minute, 1_700_000_000 + minute))

    def run(self) -> None:
        while not self.halt.is_set():
            minute = self.files
            self.write(minute, [f"{START + timedelta(minutes=minute, seconds=7 * i):%Y-%m-%d %H:%M:%S}.000,"
                                f"{(minute * 7 + i * 13) % 90 + 1}.{i}0,item{i},{SUPPLIERS[i % 3]}" for i in range(4)])
            self.files += 1
            self.halt.wait(self.every)

    def close(self) -> None:
        """Stop feeding; a last bid far ahead closes every window."""
        self.halt.set()
        self.join()
        self.write(99_999, [f"{START + timedelta(days=1):%Y-%m-%d %H:%M:%S}.000,0.01,closer,closer"])


def states(run) -> dict[str, str | None]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


def succeeded(run) -> set[str]:
    return {task for task, state in states(run).items() if state == "success"}


def bids(folder: Path) -> pd.DataFrame:
    frames = [pd.read_csv(p, names=["bidtime", "price", "item", "supplier_id"], parse_dates=["bidtime"])
              for p in sorted(folder.glob("bids-*.csv"))]
    frame = pd.concat(frames)
    return frame[frame.supplier_id != "closer"]


@pytest.fixture
def cluster_connection(spark_cluster, monkeypatch) -> None:
    host, port = spark_cluster.master_url.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({
        "conn_type": "spark", "host": host, "port": int(port),
        "extra": {"spark-binary": "spark-submit", "deploy-mode": "client"}}))


def test_a_running_job_is_redeployed_by_stopping_swapping_and_starting_it(cluster_connection, airflow_home,
                                                                            tmp_path) -> None:
    data, root = tmp_path, f"file://{tmp_path / 'root'}"
    (data / "incoming").mkdir()
    # One executor an application (the job file's spark conf): each submit starts one JVM fewer.
    settings = {"trigger": "processing-time=1 seconds", "healthy_within": 60, "stop_timeout": 120,
                "spark": {"conf": {"spark.cores.max": "1"}}}
    hook = DeploymentHook(root, "always")
    feeder = Feeder(data / "incoming")
    feeder.start()

    def redeploy(sql: str | None = None, **conf):
        dag = fleet_job("always", sql, root, **settings) if sql is not None else fleet_dag("always")
        return dag.test(run_conf=conf)

    try:
        first = redeploy(job_sql(data, 10, top=False))
        assert first.state == "success", states(first)
        assert states(first)["submit_fresh"] == "success" and states(first)["healthy"] == "success"
        v1 = hook.running()
        assert v1 is not None and v1.master.startswith("spark://") and v1.state is AppState.RUNNING
        assert hook.records.read().application["id"] == v1.id, "the record says what runs"

        unchanged = redeploy(job_sql(data, 10, top=False))
        assert states(unchanged)["unchanged"] == "success" and states(unchanged)["stop_restart"] == "skipped"
        assert hook.running().id == v1.id, "unchanged SQL leaves the running job alone"

        v2_sql = job_sql(data, 10, top=True)
        second = redeploy(v2_sql)
        assert second.state == "success", states(second)
        assert succeeded(second) >= {"restart", "stop_restart", "submit_restart", "healthy", "record"}
        v2 = hook.running()
        assert v2 is not None and v2.id != v1.id and hook.records.read().verdict == "PARTIAL"

        bad = redeploy(v2_sql.replace("MAX(price)", "MAX(price / 0)"))
        assert bad.state == "failed" and states(bad)["healthy"] == "failed", states(bad)
        assert succeeded(bad) >= {"restart", "stop_restart", "submit_restart", "roll_back", "resubmit"}
        back = hook.running()
        assert back is not None and back.sql_digest == v2.sql_digest, "v2 runs again"
        assert hook.records.read().sql == v2_sql and hook.checkpoint.recorded_sql() == v2_sql

        v3_sql = job_sql(data, 5, top=True)
        third = redeploy(v3_sql)
        assert third.state == "success", states(third)
        assert succeeded(third) >= {"clear", "stop_clear", "clear_state", "submit_fresh", "healthy", "record"}
        v3 = hook.running()
        assert v3 is not None and hook.records.read().verdict == "INCOMPATIBLE"

        worse = redeploy(job_sql(data, 15, top=True).replace("MAX(price)", "MAX(price / 0)"))
        assert worse.state == "failed" and states(worse)["healthy"] == "failed", states(worse)
        assert succeeded(worse) >= {"clear", "stop_clear", "clear_state", "submit_fresh", "roll_back", "resubmit"}
        again = hook.running()
        assert again is not None and again.sql_digest == v3.sql_digest, "v3 runs again, on its restored state"
        assert hook.checkpoint.recorded_sql() == v3_sql and hook.records.read().sql == v3_sql

        by_hand = redeploy(rollback=True)
        assert by_hand.state == "success", states(by_hand)
        assert succeeded(by_hand) >= {"restore", "stop_restore", "restore_state", "submit_restart", "healthy", "record"}
        restored = hook.running()
        assert restored is not None and restored.sql_digest == v2.sql_digest, "v2 runs again"
        assert hook.records.read().verdict == "RESTORED" and hook.records.read().sql == v2_sql
    finally:
        feeder.close()
    # The last bid's watermark closes every window; then the job is stopped for good.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _read_closer(hook):
        time.sleep(1)
    assert hook.stop_job(120, "test").down

    # The checkpoint is v2's, restored: it keeps the seam with v3's (archived, the last of the
    # archive), which had taken over from it; the failed v4's checkpoint is archived too.
    restored_state = Checkpoint(LocalFiles(), str(hook.job.checkpoint.path))
    archive = sorted((Path(hook.job.state_home.path) / "archive").iterdir())
    v3_state = Checkpoint(LocalFiles(), str(archive[-1] / "checkpoint"))
    assert v3_state.recorded_sql() == v3_sql and len(archive) == 2
    w4 = restored_state.take_over()["pipelines"]["Totals"]["watermark_ms"]
    w3 = v3_state.take_over()["pipelines"]["Totals"]["watermark_ms"]
    assert w3 < w4
    # v2 re-seeded v1's state (its layout had no room for MAX): v1's query is archived inside the
    # checkpoint, and v2 read none of the files it had read. So a window starting after the latest
    # bid of those files is one v2 saw whole. (The bad v2's re-seed, undone, left only its unused query.)
    [reseeded] = [d for d in (Path(hook.job.checkpoint.path) / "_stategate" / "reseeded").iterdir()
                  if (d / "Totals").is_dir()]
    assert len(list(reseeded.parent.iterdir())) == 2
    v1_query = QueryLog(LocalFiles(), str(reseeded / "Totals"))
    v1_read = v1_query.source_files(v1_query.source_log(0), v1_query.batch(v1_query.committed()[-1]).file_log_offset())
    w2 = max(pd.read_csv(path.removeprefix("file://"), names=["bidtime"], usecols=[0], parse_dates=["bidtime"])
             .bidtime.max() for path in v1_read).timestamp() * 1000

    out = pd.concat(pd.read_parquet(p) for p in sorted((data / "totals").glob("part-*.parquet")))
    assert not out.duplicated(["window_start", "window_end", "supplier_id"]).any(), "a window emitted twice"
    every = bids(data / "incoming")
    at = lambda ms: pd.Timestamp(ms, unit="ms")  # noqa: E731
    covered = []
    for minutes, after, upto in ((10, None, at(w3)), (5, at(w3), at(w4)), (10, at(w4), None)):
        size = pd.Timedelta(minutes=minutes)
        truth = every.assign(window_start=every.bidtime.dt.floor(f"{minutes}min")).groupby(
            ["window_start", "supplier_id"]).agg(bids=("price", "size"), total=("price", "sum"), top=("price", "max"))
        truth = truth.reset_index().assign(window_end=lambda f: f.window_start + size)
        span = (truth.window_end > (after or pd.Timestamp.min)) & (truth.window_end <= (upto or pd.Timestamp.max))
        emitted = out[(out.window_end - out.window_start == size) & (out.window_end > (after or pd.Timestamp.min))
                      & (out.window_end <= (upto or pd.Timestamp.max))]
        covered.append(len(emitted))
        merged = truth[span].merge(emitted, on=["window_start", "window_end", "supplier_id"], how="outer",
                                   suffixes=("", "_out"), indicator=True)
        assert len(merged) > 0 and (merged._merge == "both").all(), merged[merged._merge != "both"]
        assert (merged.bids == merged.bids_out).all() and (merged.total.round(2) == merged.total_out.astype(float)).all()
        kept_whole = merged[merged.window_start > at(w2)]
        assert (kept_whole.top == kept_whole.top_out.astype(float)).all(), "an added MAX is exact where seen whole"
        assert (merged.top_out.isna() | (merged.top_out.astype(float) <= merged.top)).all()
    assert sum(covered) == len(out), "every row the sink holds is a window of one of the versions' spans"


def _read_closer(hook: DeploymentHook) -> bool:
    """Whether the job has read the closing bid: its watermark is a day ahead."""
    query = hook.checkpoint.query("Totals")
    committed = query.committed()
    watermark = query.watermark(committed[-1]) if committed else None
    return watermark is not None and watermark > (START + timedelta(hours=20)).timestamp() * 1000

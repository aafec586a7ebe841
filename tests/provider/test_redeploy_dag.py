"""The example DAG end to end: real Airflow, real spark-submit, real files.

v1 first deploy → v2 adds an aggregate (PARTIAL: restart from the checkpoint) → v3 changes the
window size into a new sink (INCOMPATIBLE: the checkpoint is archived, and the new version fills
its new sink from a full replay; ``make demo`` shows the take-over into the same sink). The first two
steps again with the records on S3. (On the Spark standalone cluster, with the job always on:
``test_always_on.py``.)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from stategate.provider.hooks.deployment import DeploymentHook
from tests.provider.conftest import S3_CONN, fleet_job
from tests.spark_jobs.helpers import BID_COLUMNS, CLOSER

PART_1 = ["2020-04-15 08:01:00,2.00,A,s1", "2020-04-15 08:03:00,3.00,B,s2",
          "2020-04-15 08:06:00,4.00,C,s1", "2020-04-15 08:12:00,5.00,D,s1"]
PART_2 = ["2020-04-15 08:15:00,7.00,F,s1", "2020-04-15 08:18:00,2.00,G,s2", "2020-04-15 08:24:00,6.00,H,s1"]
PART_3 = ["2020-04-15 08:31:00,1.00,I,s2", CLOSER.strip()]


def job_sql(data: Path, size: int, top: bool, sink: str) -> str:
    top_column = ", top DECIMAL(10, 2)" if top else ""
    top_select = ", MAX(price) AS top" if top else ""
    return f"""
CREATE TABLE Bid ({BID_COLUMNS},
  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{data}/incoming', 'format' = 'csv');
CREATE TABLE Totals (window_start TIMESTAMP(3), supplier_id STRING, bids BIGINT, total DECIMAL(38, 2){top_column})
WITH ('connector' = 'filesystem', 'path' = '{data}/{sink}', 'format' = 'parquet');
INSERT INTO Totals
SELECT window_start, supplier_id, COUNT(*) AS bids, SUM(price) AS total{top_select}
FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{size}' MINUTES))
GROUP BY supplier_id, window_start, window_end;
"""


def redeploy_story(data: Path, name: str = "bids", steps: int = 3, **settings: str) -> list:
    """Run the job's DAG of the example fleet once per step (v1, v2, v3), each after a new part of
    the input arrived and the new SQL was written to the job's file; (run, task states, deployment
    record) of each. ``settings`` go to the job file (root under ``data`` by default)."""
    (data / "incoming").mkdir()
    root = settings.pop("root", f"file://{data / 'root'}")
    story = [(job_sql(data, 10, False, "totals"), PART_1), (job_sql(data, 10, True, "totals"), PART_2),
             (job_sql(data, 5, True, "totals_5m"), PART_3)]
    results = []
    for number, (sql, part) in enumerate(story[:steps], start=1):
        dag = fleet_job(name, sql, root, **settings)
        arrived = data / "incoming" / f"part{number}.csv"
        arrived.write_text("\n".join(part) + "\n")
        os.utime(arrived, (1_600_000_000 + number, 1_600_000_000 + number))
        run = dag.test()
        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        record = DeploymentHook(root, name, settings.get("conn_id"), settings.get("checkpoint_root")).records.read()
        results.append((run, states, record))
    return results


@pytest.fixture(scope="module")
def story(airflow_home, tmp_path_factory):
    data = tmp_path_factory.mktemp("redeploy")
    return data, data / "root", redeploy_story(data)


def rows(sink: Path) -> list[tuple]:
    """Every row the sink holds, file by file: v1 wrote no ``top`` column, v2 did."""
    frames = [pd.read_parquet(part) for part in sorted(sink.glob("part-*.parquet"))]
    return sorted(tuple(str(v) for v in r) for frame in frames for r in frame.itertuples(index=False))


def test_first_deploy_starts_fresh(story) -> None:
    data, root, results = story
    run, states, record = results[0]
    assert run.state == "success"
    assert states["first_deploy"] == "success" and states["submit_fresh"] == "success"
    assert states["submit_restart"] == "skipped" and states["clear_state"] == "skipped"
    assert record.verdict == "FIRST_DEPLOY" and "COUNT(*) AS bids" in record.sql


def test_partial_change_restarts_from_the_checkpoint(story) -> None:
    data, root, results = story
    run, states, record = results[1]
    assert run.state == "success"
    assert states["restart"] == "success" and states["submit_restart"] == "success"
    assert states["clear_state"] == "skipped" and states["submit_fresh"] == "skipped"
    assert record.verdict == "PARTIAL" and "MAX(price) AS top" in record.sql
    checkpoint = root / "bids" / "checkpoint"
    assert "MAX(price) AS top" in (checkpoint / "_stategate" / "job.sql").read_text()
    emitted = rows(data / "totals")
    # v1 emitted 08:00 before the restart; v2 emitted 08:10, the window open across the restart.
    assert ("2020-04-15 08:00:00", "s1", "2", "6.00") in emitted
    # s1 08:10: D (5.00) before the restart, F (7.00) after: bids/total kept their state,
    # top started from zero at the restart and saw F only.
    assert ("2020-04-15 08:10:00", "s1", "2", "12.00", "7.00") in emitted
    assert ("2020-04-15 08:10:00", "s2", "1", "2.00", "2.00") in emitted
    # What the restart carried, in the gate's report: at v1's watermark (08:11:59) only s1's 08:10
    # window was open, one state row, and MAX started from zero in it.
    said = gate_said(run)
    assert "A restart carries, as the deployed job last said" in said
    assert re.search(r"Totals: 1 state row\(s\) \(one per key and open window, or slice of one\) at micro-batch \d+",
                     said), said
    assert "MAX(Bid.price) start(s) from zero in each of those 1 row(s)" in said


def test_incompatible_change_archives_the_checkpoint_and_starts_fresh(story) -> None:
    data, root, results = story
    run, states, record = results[2]
    assert run.state == "success"
    assert states["clear"] == "success" and states["clear_state"] == "success"
    assert states["submit_fresh"] == "success" and states["submit_restart"] == "skipped"
    assert record.verdict == "INCOMPATIBLE"
    archives = list((root / "bids" / "archive").iterdir())
    assert len(archives) == 1
    archived = archives[0] / "checkpoint"
    assert "INTERVAL '10' MINUTES" in (archived / "_stategate" / "job.sql").read_text()
    assert (archived / "Totals" / "offsets").is_dir() and (archived / "Totals" / "state").is_dir()
    fresh = root / "bids" / "checkpoint"
    assert "INTERVAL '5' MINUTES" in (fresh / "_stategate" / "job.sql").read_text()
    taken = json.loads((fresh / "_stategate" / "take-over.json").read_text())
    assert taken["archived"].endswith(str(archived)) and taken["replay"] == "bounded", "the DAG passed the archive"
    assert taken["pipelines"] == {}, "a sink the archived version never wrote is not taken over"
    # v3 writes a sink v2 never wrote: nothing to take over at a seam, so a full replay fills it
    # (5-minute windows over every part).
    emitted = rows(data / "totals_5m")
    assert ("2020-04-15 08:00:00", "s1", "1", "2.00", "2.00") in emitted
    assert ("2020-04-15 08:30:00", "s2", "1", "1.00", "1.00") in emitted
    assert len(emitted) == 8
    assert DeploymentHook(f"file://{root}", "bids").lock.holder() is None
    history = sorted((root / "bids" / "history").glob("*.json"))
    assert [json.loads(h.read_text())["verdict"] for h in history] == ["FIRST_DEPLOY", "PARTIAL"]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_sql_the_engine_cannot_run_is_refused_before_anything_changes(story) -> None:
    """v4 resizes the window (INCOMPATIBLE: the state would be archived) and adds an aggregate the
    Spark job cannot run. The gate fails with the job's own message and its place; nothing in the
    job root changes: no lock, no staged SQL, the record, checkpoint and archive as they were."""
    data, root, _ = story
    v4 = job_sql(data, 30, True, "totals_5m").replace("MAX(price) AS top", "MEDIAN(price) AS top")
    dag = fleet_job("bids", v4, f"file://{root}")
    before = snapshot(root)
    run = dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "failed" and states["gate"] == "failed"
    assert all(states[task] in ("skipped", "upstream_failed", None) for task in
               ("clear_state", "submit_fresh", "submit_restart", "record")), states
    assert snapshot(root) == before
    line, col = next((n, row.index("MEDIAN") + 1) for n, row in enumerate(v4.splitlines(), start=1)
                     if "MEDIAN" in row)
    assert f"bids.sql:{line}:{col}: aggregate MEDIAN(price) is not supported" in gate_said(run)


def gate_said(run) -> str:
    """What the gate shows in Airflow's UI: its rendered report (a refusal's message, where it refused)."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.utils.session import create_session

    with create_session() as session:
        return RenderedTaskInstanceFields.get_templated_fields(
            next(ti for ti in run.get_task_instances() if ti.task_id == "gate"), session=session)["report_markdown"]


def test_records_on_s3_and_checkpoints_where_spark_reads(story, s3_root, tmp_path_factory) -> None:
    """Deployment records on an S3 API, the checkpoint on a filesystem Spark reaches (Spark's s3a
    connector, hadoop-aws, cannot be downloaded here): the same story, the same rows."""
    data = tmp_path_factory.mktemp("s3-records")
    results = redeploy_story(data, "bids_s3", steps=2, root=s3_root, conn_id=S3_CONN,
                             checkpoint_root=f"file://{data}/state")
    assert [run.state for run, _, _ in results] == ["success", "success"]
    assert [record.verdict for _, _, record in results] == ["FIRST_DEPLOY", "PARTIAL"]
    assert rows(data / "totals") == rows(story[0] / "totals")
    assert (data / "state" / "bids_s3" / "checkpoint" / "_stategate" / "job.sql").exists()
    hook = DeploymentHook(s3_root, "bids_s3", S3_CONN, f"file://{data}/state")
    assert [r.verdict for r in hook.records.history()] == ["FIRST_DEPLOY"]
    assert hook.lock.holder() is None

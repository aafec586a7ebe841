"""``make demo``: a redeploy story told by the real DAG, real Airflow and real spark-submit.

    run 1  v1 first deploy             → fresh start
    run 2  v2 adds MAX(price)          → PARTIAL: restart from the checkpoint; bids/total keep their
                                         history, top_bid starts from zero
    run 3  v3 changes the window size  → INCOMPATIBLE: the checkpoint is archived; v3 takes over from
                                         it, re-reading only the files its open windows need
    run 4  v3 again (scheduled run)    → FULL: the stream simply continues

The job is one of a fleet, as a team would run it: ``demo-run/dags/`` holds the example DAG file and
its folder of jobs (``stategate_jobs/bids.yaml`` and ``bids.sql``), and each new version of the job
arrives by writing ``bids.sql`` there. Before each run the next part of the bundled bid files
"arrives". Everything is written under ``demo-run/`` (Airflow home with SQLite, the DAGs, the job
root, the sink files), kept for inspection.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from stategate.analyzer import Verdict
from stategate.provider import xcom

REPO = Path(__file__).resolve().parents[1]
BUNDLED = Path(__file__).with_name("stategate_demo")
#: v1 is the example job itself; v2 and v3 are its next versions.
STORY = [
    (REPO / "dags" / "stategate_jobs" / "bids.sql", 1, "first deploy of v1 (10-minute bid totals per supplier)"),
    (BUNDLED / "v2.sql", 2, "v2 adds MAX(price) AS top_bid"),
    (BUNDLED / "v3.sql", 3, "v3 changes the window to 15 minutes"),
    (BUNDLED / "v3.sql", 4, "scheduled run, SQL unchanged"),
]
#: Where the example job reads and writes, and the demo's folders (under ``demo-run/``) in their place.
PLACES = {"/tmp/stategate-input/bids": "incoming", "/tmp/stategate-output": "out"}
BRANCHES = ("restart", "clear", "first_deploy", "approval")


def prepare(demo: Path) -> dict[str, str]:
    """A private Airflow home (SQLite) and the environment every Airflow call here uses."""
    shutil.rmtree(demo, ignore_errors=True)
    (demo / "incoming").mkdir(parents=True)
    home = demo / "airflow"
    jobs = demo / "dags" / "stategate_jobs"
    jobs.mkdir(parents=True)
    shutil.copy(REPO / "dags" / "stategate_redeploy.py", demo / "dags")
    (jobs / "bids.yaml").write_text(f"sql: bids.sql\nroot: file://{demo / 'root'}\nschedule: \"@hourly\"\n")
    bin_dir = str(Path(sys.executable).parent)
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(demo / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW__LOGGING__NAMESPACE_LEVELS": "py.warnings=ERROR",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
    }
    os.environ.update(env)
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return env


def placed(sql: str, demo: Path) -> str:
    """``sql`` reading and writing under ``demo`` instead of the example job's folders in /tmp."""
    for example, folder in PLACES.items():
        sql = sql.replace(f"'{example}", f"'{demo / folder}")
    return sql


def arrive(demo: Path, part: int) -> None:
    target = demo / "incoming" / f"bids-part{part}.csv"
    shutil.copy(BUNDLED / f"bids-part{part}.csv", target)
    os.utime(target, (1_700_000_000 + part, 1_700_000_000 + part))


def gate_xcom(run_id: str, key: str):
    """What the run's gate pushed under ``key`` (``stategate.provider.xcom``)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.scalar(select(XComModel).where(
            XComModel.run_id == run_id, XComModel.task_id == xcom.GATE_TASK_ID, XComModel.key == key))
        return None if row is None else XComModel.deserialize_value(row)


def new_rows(sink: Path, seen: set[str]):
    import pandas as pd

    files = sorted(p for p in sink.glob("part-*.parquet") if p.name not in seen)
    seen.update(p.name for p in files)
    if not files:
        return None
    return pd.concat([pd.read_parquet(p) for p in files]).sort_values(["window_start", "supplier_id"])


def straddling(rows, part: int) -> str | None:
    """A window open across the restart: top_bid saw only the bids after it, bids/total all of them."""
    import pandas as pd

    names = ["bidtime", "price", "item", "supplier_id"]
    before = pd.read_csv(BUNDLED / f"bids-part{part - 1}.csv", names=names, parse_dates=["bidtime"])
    after = pd.read_csv(BUNDLED / f"bids-part{part}.csv", names=names, parse_dates=["bidtime"])
    candidates = []
    for _, row in rows[rows.window_start == rows.window_start.min()].iterrows():
        def pick(frame):
            return frame[(frame.bidtime >= row.window_start) & (frame.bidtime < row.window_end)
                         & (frame.supplier_id == row.supplier_id)]
        old, new = pick(before), pick(after)
        if not old.empty and not new.empty:
            candidates.append((old.price.max() > new.price.max(), row, old, new))
    if not candidates:
        return None
    _, row, old, new = max(candidates, key=lambda c: c[0])
    return (f"  window {row.window_start:%H:%M}-{row.window_end:%H:%M} {row.supplier_id} was open across the "
            f"restart: bids = {len(old)} before + {len(new)} after = {row.bids} (kept its state); "
            f"top_bid = {row.top_bid} = max of the {len(new)} bids after the restart "
            f"(the {len(old)} before it peaked at {old.price.max():.2f})")


def main() -> int:
    demo = REPO / "demo-run"
    prepare(demo)
    from airflow.sdk import DagRunState

    sys.path.insert(0, str(demo / "dags"))  # as Airflow imports its dags folder
    import stategate_redeploy

    from stategate.provider.hooks.deployment import DeploymentHook
    from stategate.spark_jobs.cutover import TakeOver

    # dag.test() warns "No tasks to run" while a spark-submit task is still running: not news.
    logging.getLogger("airflow.sdk.definitions.dag").setLevel(logging.ERROR)

    root = demo / "root"
    seen: set[str] = set()
    for version, part, story in STORY:
        (demo / "dags" / "stategate_jobs" / "bids.sql").write_text(placed(version.read_text(), demo))
        arrive(demo, part)
        print(f"\n=== run {part}: {story} (+ bids-part{part}.csv) ===", flush=True)
        run = importlib.reload(stategate_redeploy).stategate_bids.test()
        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        branch = next((b for b in BRANCHES if states.get(b) == "success"), "?")
        verdict = gate_xcom(run.run_id, xcom.VERDICT)
        print(f"verdict: {verdict}    branch: {branch}    run: {run.state}")
        report = gate_xcom(run.run_id, xcom.REPORT)
        for finding in (report or {}).get("findings", []):
            print(f"  {finding['effect']:<12} {finding['rule']:<34} {finding['message']}")
        if report and report["aggregates"]["added"]:
            print(f"  aggregates kept: {report['aggregates']['kept']}  added: {report['aggregates']['added']}")
        for carried in (report or {}).get("carried", []):
            print(f"  the restart carries {carried['state_rows']} state rows of {carried['pipeline']} "
                  f"(open windows per supplier, as v{part - 1} last said at micro-batch {carried['batch']})")
        archive = root / "bids" / "archive"
        if states.get("clear_state") == "success":
            print(f"  checkpoint archived to {next(archive.iterdir())}")
            for replay in (report or {}).get("replay", []):
                print(f"  replay span of {replay['sink']}: {replay['span_seconds']:.0f} s ({replay['note']})")
                print(f"  seam: {replay['seam']}")
            taken = TakeOver.recorded(DeploymentHook(f"file://{root}", "bids").checkpoint)
            for name, cut in (taken.cutovers if taken is not None else {}).items():
                print(f"  take-over of {name}: re-read {cut.replayed} of the {cut.read} bid "
                      f"files v2 had read, then the new ones (not every bid file since the first deploy)")
        if run.state != DagRunState.SUCCESS:
            print(f"the DAG run failed: {states}", file=sys.stderr)
            return 1
        sink = demo / "out" / "supplier_totals"
        rows = new_rows(sink, seen)
        if rows is not None:
            print(f"  {len(rows)} new result rows in {sink.name}/, the first windows:")
            print("    " + rows.head(6).to_string(index=False).replace("\n", "\n    "))
            if verdict == Verdict.PARTIAL.value:
                print(straddling(rows, part) or "")
    history = sorted((root / "bids" / "history").glob("*.json"))
    print(f"\ndeployment record: {root / 'bids' / 'deployment.json'} ({len(history)} earlier in history/)")
    print(f"everything is under {demo}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

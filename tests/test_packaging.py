"""The distribution as a user gets it: the wheel, installed into a fresh virtual environment.

A user's site-packages must hold one ``stategate`` namespace and nothing else of ours (names such as
``analyzer`` or ``provider`` would collide with other packages and with DAG-folder modules), Airflow
must discover the provider through its entry point, and the example DAG must import.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.wheel import ROOT, run

DIST = "airflow-provider-stategate"


def test_every_installed_file_is_in_the_stategate_namespace(installed_wheel: Path) -> None:
    shown = run([str(installed_wheel / "bin" / "pip"), "show", "--files", DIST])
    files = [line.strip() for line in shown.split("Files:", 1)[1].splitlines() if line.strip()]
    modules = [f for f in files if f.endswith(".py")]
    assert "stategate/analyzer/compare.py" in modules and "stategate/provider/operators/gate.py" in modules
    assert "stategate/spark_jobs/__main__.py" in modules and "stategate/analyzer/rules/shared.py" in modules
    outside = [f for f in files if not f.startswith(("stategate/", "airflow_provider_stategate-"))
               and Path(f).name != "stategate"]  # the console script, in the environment's bin/
    assert outside == []


def test_airflow_discovers_the_provider_and_the_example_dag_imports(installed_wheel: Path, tmp_path: Path) -> None:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "PATH": f"{installed_wheel / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    listed = run([str(installed_wheel / "bin" / "airflow"), "providers", "list"], env=env, cwd=tmp_path)
    assert DIST in listed
    dag = ROOT / "dags" / "stategate_redeploy.py"
    imported = run([str(installed_wheel / "bin" / "python"), "-c",
                    f"import runpy; print(sorted(runpy.run_path({str(dag)!r})['stategate_bids'].task_ids))"],
                   env=env, cwd=tmp_path)
    assert "'gate'" in imported.strip().splitlines()[-1], "the example fleet's job has its DAG"


def test_the_console_script_gives_the_verdict(installed_wheel: Path, tmp_path: Path) -> None:
    query = ("SELECT a, sum(b), {}(c)\nFROM TABLE(TUMBLE(TABLE MyTable, DESCRIPTOR(ts), INTERVAL '1' MINUTE))\n"
             "GROUP BY a, window_start, window_end;\n")
    (tmp_path / "old.sql").write_text(query.format("max"))
    (tmp_path / "new.sql").write_text(query.format("min"))
    report = run([str(installed_wheel / "bin" / "stategate"), "check", "old.sql", "new.sql"], cwd=tmp_path)
    assert report.startswith("Verdict: PARTIAL")

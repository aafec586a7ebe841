"""A real Airflow for the provider tests: a private AIRFLOW_HOME, SQLite, a migrated metadata DB.

Airflow reads its configuration when first imported, so the environment is set here, before any
test module imports it. ``dag.test()`` needs the DAG inside the dags folder: the example DAG and the
test DAGs are copied there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOME = Path(tempfile.mkdtemp(prefix="stategate-airflow-"))
DAGS = HOME / "dags"
NOTIFIED = HOME / "notified.jsonl"

os.environ.update({
    "AIRFLOW_HOME": str(HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{HOME}/airflow.db",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    "STATEGATE_TEST_NOTIFIED": str(NOTIFIED),
})

DAGS.mkdir(parents=True)
shutil.copy(REPO / "dags" / "stategate_redeploy.py", DAGS)
for test_dag in Path(__file__).with_name("dags").glob("*.py"):
    shutil.copy(test_dag, DAGS)
subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sys.path.append(str(DAGS))  # as Airflow does for its dags folder: DAG files import as modules


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    return HOME


def pytest_sessionfinish(session, exitstatus) -> None:
    shutil.rmtree(HOME, ignore_errors=True)

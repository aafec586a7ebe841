"""A real Airflow for the provider tests: a private AIRFLOW_HOME, SQLite, a migrated metadata DB.

Airflow reads its configuration when first imported, so the environment is set here, before any
test module imports it. ``dag.test()`` needs the DAG inside the dags folder: the example DAG and the
test DAGs are copied there.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.servers import free_port, listening, start, stop

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
#: The fleet of the example DAG file: the tests write their jobs here.
JOBS = DAGS / "stategate_jobs"
JOBS.mkdir()
for test_dag in Path(__file__).with_name("dags").glob("*.py"):
    shutil.copy(test_dag, DAGS)
# Migrated in the background (11 s here) while the analyzer's tests run; a provider test waits for it.
MIGRATE_LOG = HOME / "migrate.log"
_migrating = subprocess.Popen(
    [sys.executable, "-m", "airflow", "db", "migrate"], stdout=MIGRATE_LOG.open("wb"), stderr=subprocess.STDOUT)
sys.path.append(str(DAGS))  # as Airflow does for its dags folder: DAG files import as modules


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before each provider test: the metadata DB migrated, or the migration's output raised."""
    failed = _migrating.wait(timeout=600)
    assert failed == 0, f"airflow db migrate failed:\n{MIGRATE_LOG.read_text(errors='replace')[-3000:]}"


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    return HOME


def fleet_job(name: str, sql: str, root: str, **settings):
    """A job of the example fleet: its SQL and job file written into the dags folder, and its DAG as
    Airflow's parser builds it from them (``stategate_<name>``). Writing the SQL again (same
    settings) is how a new version of the job arrives."""
    import yaml

    (JOBS / f"{name}.sql").write_text(sql)
    (JOBS / f"{name}.yaml").write_text(yaml.safe_dump({"sql": f"{name}.sql", "root": root, "schedule": None,
                                                       **settings}))
    return fleet_dag(name)


def fleet_dag(name: str):
    """The DAG of job ``name`` as the example DAG file builds it from the fleet folder now."""
    import importlib

    import stategate_redeploy

    return getattr(importlib.reload(stategate_redeploy), f"stategate_{name}")


S3_CONN = "stategate_s3"


@pytest.fixture(scope="session")
def s3_server() -> str:
    """An S3 API on 127.0.0.1 (moto in server mode: real HTTP, conditional writes honoured) with a
    bucket, reached as Airflow's ``aws`` connection ``stategate_s3`` with an ``endpoint_url``."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = start([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                   lambda: listening(port), log=str(HOME / "moto.log"))
    os.environ[f"AIRFLOW_CONN_{S3_CONN.upper()}"] = json.dumps({
        "conn_type": "aws", "login": "stategate-test", "password": "stategate-test",
        "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}})
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    S3Hook(aws_conn_id=S3_CONN).create_bucket("stategate")
    yield "s3://stategate"
    stop(server)


@pytest.fixture
def s3_root(s3_server: str, request) -> str:
    """A root of its own in the bucket for each test."""
    return f"{s3_server}/{re.sub(r'[^a-z0-9-]', '-', request.node.name.lower())[:60]}"


def pytest_sessionfinish(session, exitstatus) -> None:
    if _migrating.poll() is None:  # no provider test ran
        _migrating.kill()
        _migrating.wait()
    shutil.rmtree(HOME, ignore_errors=True)


@pytest.fixture
def spawn():
    """Start functions in fresh processes (spawned: no inherited locks or caches); killed at the end."""
    context = multiprocessing.get_context("spawn")
    started: list = []

    def run(target, *args):
        process = context.Process(target=target, args=args)
        process.start()
        started.append(process)
        return process

    yield run
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()

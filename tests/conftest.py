"""Shared fixtures: one real SparkSession for the whole test session."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from stategate.spark_jobs.session import get_session

    session = get_session("stategate-tests", master="local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """One Spark standalone cluster for the session: a master and two workers (one core, 1 GB each)
    on 127.0.0.1, stopped by their pids at the end."""
    from tests.servers import SparkStandalone

    cluster = SparkStandalone(str(tmp_path_factory.mktemp("spark-cluster")))
    try:
        cluster.add_worker()
        cluster.add_worker()
        yield cluster
    finally:
        cluster.stop()

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

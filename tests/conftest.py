"""Shared fixtures: one real SparkSession for the whole test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

#: Every JVM a test starts in a process of its own (a job run as a module, spark-submit from Airflow,
#: the standalone cluster and the executors it launches) lives for seconds to a few minutes: it
#: exits before the JIT's optimising tier pays for its compiles. Without that tier such a test uses
#: about 40% less CPU (test_always_on: 632 against 356 CPU-seconds, 357 against 248 s), and on two
#: cores the suite is bound by CPU. It changes how fast code runs, never what it computes.
SHORT_LIVED_JVM = ("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")
os.environ[SHORT_LIVED_JVM[0]] = f"{os.environ.get(SHORT_LIVED_JVM[0], '')} {SHORT_LIVED_JVM[1]}".strip()


@contextmanager
def long_lived_jvm() -> Iterator[None]:
    """The JVM started inside this block keeps the optimising tier: the session's, which runs every
    in-process test, went 18% slower without it
    (test_flink_equality: 208 against 176 s)."""
    name, option = SHORT_LIVED_JVM
    inherited = os.environ[name]
    if own := inherited.replace(option, "").strip():
        os.environ[name] = own
    else:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ[name] = inherited


@pytest.fixture(scope="session")
def spark():
    from stategate.spark_jobs.session import get_session

    with long_lived_jvm():
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

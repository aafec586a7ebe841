"""Shared fixtures: one real SparkSession for the whole test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.jvm import SHORT_LIVED, JobClasses, add_option, long_lived_jvm
from tests.servers import BackgroundCluster
from tests.wheel import WheelEnvironment

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
add_option(SHORT_LIVED)

TESTS = Path(__file__).resolve().parent
#: Where the tests that start JVMs of their own live: a session holding one of them writes a job's
#: classes for its JVMs to share (tests.jvm) while the others run; a session of analyzer tests
#: starts no JVM.
JVM_TESTS = (TESTS / "spark_jobs", TESTS / "provider")
#: The tests of the installed distribution, whose environment is built from the session's start.
PACKAGING_TESTS = TESTS / "test_packaging.py"
job_classes: JobClasses | None = None
wheel_environment: WheelEnvironment | None = None
cluster: BackgroundCluster | None = None


def starts_jvms(item: pytest.Item) -> bool:
    return any(item.path.is_relative_to(folder) for folder in JVM_TESTS)


def pytest_collection_finish(session: pytest.Session) -> None:
    global job_classes, wheel_environment, cluster
    if any(starts_jvms(item) for item in session.items):
        job_classes = JobClasses()
    if any("spark_cluster" in getattr(item, "fixturenames", ()) for item in session.items):
        cluster = BackgroundCluster(job_classes)
    if any(item.path == PACKAGING_TESTS for item in session.items):
        wheel_environment = WheelEnvironment()


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start a session or a cluster
def pytest_runtest_setup(item: pytest.Item) -> None:
    if job_classes is not None and starts_jvms(item):
        job_classes.share()
        if cluster is not None:  # no JVM of a test starts while the cluster's do
            cluster.join()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if cluster is not None:
        cluster.stop()
    if job_classes is not None:
        job_classes.stop()
    if wheel_environment is not None:
        wheel_environment.remove()


#: How PySpark passes options to the JVM it starts.
SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"
#: The heap of the session's JVM. The suite runs about a thousand streaming queries in it, and
#: Spark keeps some of each after it stops (its state stores until their maintenance unloads
#: them, 18 MB after five Flink fixtures' queries); at Spark's default of 1 GB, the queries of
#: the widest fixtures (67 aggregates a window) took the session past it late in the suite.
SESSION_HEAP = "2g"


@pytest.fixture(scope="session")
def spark():
    from stategate.spark_jobs.session import get_session

    before = os.environ.get(SUBMIT_ARGS)
    os.environ[SUBMIT_ARGS] = f"--driver-memory {SESSION_HEAP} pyspark-shell"
    try:
        with long_lived_jvm():
            session = get_session("stategate-tests", master="local[2]")
    finally:
        if before is None:
            del os.environ[SUBMIT_ARGS]
        else:
            os.environ[SUBMIT_ARGS] = before
    yield session
    session.stop()


@pytest.fixture(scope="session")
def installed_wheel() -> Path:
    """A fresh virtual environment holding the project's wheel and its pinned dependencies."""
    assert wheel_environment is not None, "built for every session that collects the packaging tests"
    return wheel_environment.wait()


@pytest.fixture(scope="session")
def spark_cluster():
    """One Spark standalone cluster for the session: a master and two workers (one core, 1 GB each)
    on 127.0.0.1, started in the background (:class:`tests.servers.BackgroundCluster`), stopped by
    their pids at the end."""
    assert cluster is not None, "started for every session that collects a test using it"
    return cluster.wait()

"""Real servers on 127.0.0.1 for the tests, started as processes and stopped by their pids."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import closing
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from tests.jvm import JobClasses


def free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    with closing(socket.socket()) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def start(command: Sequence[str], ready: Callable[[], bool], *, timeout: float = 60,
          log: str | None = None, env: dict | None = None) -> subprocess.Popen:
    """Start ``command`` in its own process group and wait until ``ready()``; its output goes to
    ``log`` (so a failed start can be read) or nowhere."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                               env={**os.environ, **(env or {})})
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            tail = open(log, errors="replace").read()[-2000:] if log else ""
            raise RuntimeError(f"{command[0]} did not start (exit {process.returncode}): {tail}")
        time.sleep(0.1)
    return process


def stop(process: subprocess.Popen) -> None:
    """Stop the process group by its pid: TERM, then KILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue



class SparkStandalone:
    """A Spark standalone master and its workers on 127.0.0.1, from the installed pyspark's
    ``spark-class``; each worker (with the executors it launches) is one process group."""

    def __init__(self, work_dir: str) -> None:
        import pyspark

        home = os.path.dirname(pyspark.__file__)
        self.work_dir = work_dir
        self.spark_class = os.path.join(home, "bin", "spark-class")
        self.env = {"SPARK_HOME": home, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        self.port, self.ui = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.master = start([self.spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                             "--port", str(self.port), "--webui-port", str(self.ui)],
                            lambda: listening(self.port), log=f"{work_dir}/master.log", env=self.env)
        self.workers: dict[int, subprocess.Popen] = {}  # by RPC port, as the master names them

    def add_worker(self, cores: int = 1, memory: str = "1g") -> subprocess.Popen:
        port = free_port()
        folder = os.path.join(self.work_dir, f"worker-{port}")
        os.makedirs(folder, exist_ok=True)
        alive = len(self.alive_workers())
        self.workers[port] = start(
            [self.spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
             "--port", str(port), "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
             "--work-dir", folder],
            lambda: len(self.alive_workers()) > alive, log=f"{folder}.log", env=self.env, timeout=120)
        return self.workers[port]

    def kill_busy_worker(self) -> int:
        """SIGKILL a worker running an executor, with its executors (a node lost); its port."""
        busy = [w["port"] for w in self.alive_workers() if w.get("coresused", 0) > 0 and w["port"] in self.workers]
        if not busy:
            raise RuntimeError("no worker of this cluster runs an executor")
        worker = self.workers.pop(busy[0])
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        return busy[0]

    def alive_workers(self) -> list[dict]:
        """The master's view of its live workers (id, port, cores used, ...)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as response:
                return [w for w in json.load(response).get("workers", []) if w.get("state") == "ALIVE"]
        except (OSError, ValueError):  # the master's web UI starts after its RPC port
            return []

    def stop(self) -> None:
        for process in [*self.workers.values(), self.master]:
            stop(process)


class BackgroundCluster:
    """The session's standalone cluster (a master and two workers), started by a thread while the
    tests that start no JVM run on the other core: its three JVMs took 11.5 s to come up here. It
    starts once the job's class archive is written (:class:`tests.jvm.JobClasses`), so that its
    workers, and the executors they launch, map it."""

    def __init__(self, classes: JobClasses | None) -> None:
        self.work = tempfile.mkdtemp(prefix="stategate-spark-cluster-")
        self._classes = classes
        self._cluster: SparkStandalone | None = None
        self._failure: Exception | None = None
        self._starter = threading.Thread(target=self._start, name="spark-cluster", daemon=True)
        self._starter.start()

    def _start(self) -> None:
        try:
            if self._classes is not None:
                self._classes.share()
            self._cluster = SparkStandalone(self.work)
            self._cluster.add_worker()
            self._cluster.add_worker()
        except (OSError, RuntimeError) as failure:  # raised where a test waits for the cluster
            self._failure = failure

    def join(self) -> None:
        """Wait until it is up, or failed to come up (which :meth:`wait` raises)."""
        self._starter.join()

    def wait(self) -> SparkStandalone:
        """The cluster, once up; what failed to start it, raised."""
        self.join()
        if self._failure is not None:
            raise self._failure
        assert self._cluster is not None
        return self._cluster

    def stop(self) -> None:
        """At the session's end: stop its processes by their pids, and remove its directory."""
        self._starter.join()
        if self._cluster is not None:
            self._cluster.stop()
        shutil.rmtree(self.work, ignore_errors=True)

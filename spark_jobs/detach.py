"""An always-on job started detached from whatever submitted it, where the driver runs on the
submitting host (client deploy mode: a Spark standalone cluster, which runs no Python driver in
cluster mode, and ``local``).

An Airflow task submits the job with spark-submit and must end; the job must run on. With
``run --detach`` the application spark-submit starts is a launcher: it reads the configuration that
spark-submit gave it (the master, ``--conf``, ``--py-files``, the resolved ``--packages``: Spark's
system properties, through the gateway spark-submit opened, without starting a Spark context),
starts the same application again with the same arguments but ``--detach``, in a session of its
own that outlives the task, its output in a log file, and waits until the job says it runs (or
ends, failing the task with its exit code and its log's last lines). On YARN and Kubernetes the
cluster runs the driver (cluster deploy mode) and spark-submit returns at once when told not to
wait for the application (``spark.yarn.submit.waitAppCompletion=false``,
``spark.kubernetes.submission.waitAppCompletion=false``): no launcher is needed there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from stategate.spark_jobs.lifecycle import LOG_ENV, RUNNING_LINE

#: Spark's properties the launcher does not pass on as ``--conf``: given as arguments, set by
#: spark-submit itself, or already resolved (packages are in ``spark.jars``).
_OWN = {"spark.master", "spark.app.name", "spark.app.submitTime", "spark.submit.deployMode",
        "spark.submit.pyFiles", "spark.jars.packages", "spark.files"}


def submit_command(properties: dict[str, str], application: str, args: Sequence[str]) -> list[str]:
    """The spark-submit command that starts ``application`` with ``args`` as spark-submit was asked
    to start the launcher (``properties``: its Spark system properties)."""
    spark_submit = str(Path(os.environ["SPARK_HOME"]) / "bin" / "spark-submit")
    command = [spark_submit, "--master", properties["spark.master"], "--deploy-mode", "client",
               "--name", properties.get("spark.app.name", "stategate")]
    py_files = properties.get("spark.submit.pyFiles")
    if py_files:
        command += ["--py-files", py_files]
    files = [f for f in properties.get("spark.files", "").split(",")
             if f and f.removeprefix("file://") not in (py_files or "").split(",")]
    if files:
        command += ["--files", ",".join(files)]
    for key, value in sorted(properties.items()):
        if key not in _OWN:
            command += ["--conf", f"{key}={value}"]
    return [*command, application, *args]


def launch(args: Sequence[str], startup_timeout_s: float, log_dir: str | None = None) -> int:
    """Start the job detached (``args``: the ``run`` arguments without ``--detach``) and wait until
    it runs: 0. Where it ends first (a refused restart, invalid SQL), its exit code, with its log."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()  # spark-submit's own: no Spark context is started
    system = gateway.jvm.java.lang.System.getProperties()
    properties = {str(k): str(system.getProperty(k)) for k in system.stringPropertyNames() if str(k).startswith("spark.")}
    folder = Path(log_dir or Path(tempfile.gettempdir()) / "stategate-drivers")
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    log = folder / f"{properties.get('spark.app.name', 'stategate')}-{stamp}-{os.getpid()}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY_")}
    env[LOG_ENV] = str(log)
    command = submit_command(properties, sys.argv[0], args)
    with open(log, "ab") as out:
        job = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=env, start_new_session=True)
    deadline = time.monotonic() + startup_timeout_s
    while time.monotonic() < deadline:
        said = log.read_text(errors="replace")
        running = next((line for line in said.splitlines() if line.startswith(RUNNING_LINE)), None)
        if running is not None:
            print(f"{running}, detached (pid {job.pid}); its driver's output: {log}", flush=True)
            return 0
        if job.poll() is not None:
            print(f"stategate: the job ended before it ran (exit {job.returncode}); its output ({log}) ends with:\n"
                  + "\n".join(said.splitlines()[-30:]), file=sys.stderr, flush=True)
            return job.returncode or 1
        time.sleep(0.5)
    print(f"stategate: the job did not say it runs within {startup_timeout_s:.0f} s; it goes on (pid {job.pid}, "
          f"output {log}): stop it with python -m stategate.spark_jobs stop", file=sys.stderr, flush=True)
    return 1

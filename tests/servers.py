"""Real servers on 127.0.0.1 for the tests, started as processes and stopped by their pids."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import closing
from typing import Callable, Sequence


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

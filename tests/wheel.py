"""The distribution as a user installs it: the project's wheel in a fresh virtual environment,
built in the background from the start of a session that holds the packaging tests.

Building it is mostly pip unpacking the pinned dependencies (pyspark and Airflow among them): 40 s
of the packaging tests' 56 s when their fixture built it. Built while the analyzer's tests keep
only one core busy, it left them 11.6 s of a whole suite's time (2026-12-02); a session of the
packaging tests alone still waits for all of it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(command: list[str], **kwargs) -> str:
    """``command``'s output; an assertion error with its output's end when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


class WheelEnvironment:
    """A virtual environment holding the project's wheel and its pinned dependencies, being built
    by a thread (the work is pip's, in processes of its own)."""

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="stategate-wheel-"))
        self.venv = self.work / "venv"
        self._failure: Exception | None = None
        self._builder = threading.Thread(target=self._build, name="wheel-environment", daemon=True)
        self._builder.start()

    def _build(self) -> None:
        try:
            dist = self.work / "dist"
            run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(ROOT)])
            (wheel,) = dist.glob("*.whl")
            run([sys.executable, "-m", "venv", str(self.venv)])
            # No byte-compiling of the dependencies (tens of thousands of files): the tests import a few.
            run([str(self.venv / "bin" / "pip"), "install", "--quiet", "--no-compile", "-c",
                 str(ROOT / "constraints.txt"), str(wheel)])
        # A failed step, a timed-out one, no wheel or two: raised where a test waits for the environment.
        except (AssertionError, OSError, ValueError, subprocess.SubprocessError) as failure:
            self._failure = failure

    def wait(self) -> Path:
        """The environment, once built; what failed to build it, raised."""
        self._builder.join()
        if self._failure is not None:
            raise self._failure
        return self.venv

    def remove(self) -> None:
        """At the session's end: wait for the build (its processes write into the directory), then
        remove it."""
        self._builder.join()
        shutil.rmtree(self.work, ignore_errors=True)

"""What spark-submit ships with a job: the code its driver imports, as one zip for ``py_files``.

On a cluster the driver may start where stategate is not installed (YARN or Kubernetes cluster
mode), so the submit task hands spark-submit a zip of the installed ``stategate.analyzer`` and
``stategate.spark_jobs`` and of sqlglot, which they import. PySpark itself is the cluster's. The
job runs no Python on executors (every operator is Spark SQL), so executors need nothing more.

The zip is built where the submit task runs, once per content: its name carries a digest of
every file in it, so an upgrade of stategate or sqlglot makes a new zip and a DAG run never ships
code other than what the gate analysed with.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import zipfile
from pathlib import Path

#: Packages the job's driver imports, by the names it imports them with.
SHIPPED = ("stategate.analyzer", "stategate.spark_jobs", "sqlglot")
NAMESPACE_INIT = "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"


def job_py_files(directory: str | None = None) -> str:
    """The path of the zip (built if needed) to pass as spark-submit's ``py_files``.

    :param directory: where zips are kept (default: ``stategate-py-files`` in the temp directory)
    """
    files = sorted(_files())
    digest = hashlib.sha256(NAMESPACE_INIT.encode())
    for name, path in files:
        digest.update(name.encode())
        digest.update(path.read_bytes())
    folder = Path(directory or Path(tempfile.gettempdir()) / "stategate-py-files")
    target = folder / f"stategate-job-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        return str(target)
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder / f".{target.name}.{os.getpid()}.tmp"
    with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
        # zipimport finds no namespace packages: the zip's stategate is a regular package that
        # extends itself over any other stategate on sys.path (the installed provider, say).
        archive.writestr("stategate/__init__.py", NAMESPACE_INIT)
        for name, path in files:
            archive.write(path, name)
    os.replace(staged, target)  # concurrent submits build the same bytes; either copy wins whole
    return str(target)


def _files() -> list[tuple[str, Path]]:
    """(name in the zip, file) of every Python source of the shipped packages."""
    found = []
    for package in SHIPPED:
        module = importlib.import_module(package)
        prefix = package.replace(".", "/")
        for folder in module.__path__:
            for path in Path(folder).rglob("*.py"):
                found.append((f"{prefix}/{path.relative_to(folder).as_posix()}", path))
    return found

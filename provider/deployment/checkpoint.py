"""The deployed checkpoint's files, read only, as the job and its take-over read them.

The gate (and ``stategate check --deployed``) reads what the job recorded beside its state and
Spark's own logs (:mod:`spark_jobs.checkpoint`) to judge the new SQL, and, before a redeploy clears
the state, estimates what the new version's take-over would read again (:func:`spark_jobs.cutover.volumes`),
by the URIs Spark wrote. Files inside the checkpoint are read through the job root, so its
confinement holds (no link followed); the source files the logs name, which live wherever the job's
tables are, are only looked at (exists, size), never opened.
"""

from __future__ import annotations

import re

from airflow.sdk import ObjectStoragePath

from stategate.provider.deployment.root import CHECKPOINT, JobRoot, StateGateError, fresh, read_text


class DeployedCheckpoint:
    """:class:`spark_jobs.checkpoint.CheckpointFiles` over the job root's checkpoint.

    :param job: the job whose checkpoint is read
    """

    def __init__(self, job: JobRoot) -> None:
        self.job = job
        self.uri = job.spark_uri(job.checkpoint).rstrip("/")

    def exists(self, uri: str) -> bool:
        return self._path(uri).exists()

    def list(self, uri: str) -> list[str]:
        folder = self._inside(uri)
        return [f"{uri.rstrip('/')}/{child.name}" for child in folder.iterdir()] if folder.exists() else []

    def read_text(self, uri: str) -> str:
        return read_text(self._inside(uri))

    def size(self, uri: str) -> int:
        path = self._path(uri)
        return int(path.fs.size(path.path))

    def _inside(self, uri: str) -> ObjectStoragePath:
        """A file of the checkpoint, through the job root (links refused); anything else is refused."""
        if uri != self.uri and not uri.startswith(self.uri + "/"):
            raise StateGateError(f"refusing to read {uri}: it is outside the checkpoint {self.uri}")
        below = uri[len(self.uri):].strip("/")
        return fresh(self.job.state_path(CHECKPOINT, *(below.split("/") if below else ())))

    def _path(self, uri: str) -> ObjectStoragePath:
        """A checkpoint file, or a source file as Spark named it (``s3a://`` is the store's ``s3://``)."""
        if uri == self.uri or uri.startswith(self.uri + "/"):
            return self._inside(uri)
        return fresh(ObjectStoragePath(re.sub(r"^s3[an]://", "s3://", uri), conn_id=self.job.conn_id))

"""A job's checkpoints (the deployed one, and those in its archive), as the job and its take-over read them.

The gate (and ``stategate check --deployed``) reads what the job recorded beside its state and
Spark's own logs (:mod:`spark_jobs.checkpoint`) to judge the new SQL, and, before a redeploy clears
the state, estimates what the new version's take-over would read again
(:func:`spark_jobs.cutover.volumes`), by the URIs Spark wrote; a rollback reads an archived one. Files inside the checkpoint are read through the job root, so its
confinement holds (no link followed); the source files the logs name, which live wherever the job's
tables are, are only looked at (exists, size), never opened.
"""

from __future__ import annotations

import re

from airflow.sdk import ObjectStoragePath

from stategate.provider.deployment.root import CHECKPOINT, JobRoot, StateGateError, fresh, read_text, replace_text


class DeployedCheckpoint:
    """:class:`spark_jobs.checkpoint.WritableFiles` over a checkpoint in the job's state home: it
    reads Spark's files and stategate's record, and writes nothing but what a running job is asked
    through its checkpoint (a stop request) and what a restored one must know (its seam).

    :param job: the job whose checkpoint is read
    :param parts: where the checkpoint is in the job's state home (default: the deployed one;
        ``("archive", stamp, "checkpoint")``: an archived one)
    """

    def __init__(self, job: JobRoot, parts: tuple[str, ...] = (CHECKPOINT,)) -> None:
        self.job = job
        self.parts = parts
        self.uri = job.spark_uri(job.state_path(*parts)).rstrip("/")

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

    def write_text(self, uri: str, text: str) -> None:
        path = self._inside(uri)
        replace_text(path, text)
        self._forget_checksum(path)

    def mkdirs(self, uri: str) -> None:
        self._inside(uri).mkdir(parents=True, exist_ok=True)

    def delete(self, uri: str) -> None:
        path = self._inside(uri)
        if path.exists():
            path.unlink()
        self._forget_checksum(path)

    @staticmethod
    def _forget_checksum(path: ObjectStoragePath) -> None:
        """Hadoop's local filesystem keeps a checksum beside each file it writes (``.<name>.crc``) and
        refuses a file that no longer matches it: a file the job wrote and this rewrites loses it
        (Hadoop reads a file without one unchecked)."""
        checksum = path.parent / f".{path.name}.crc"
        if checksum.exists():
            checksum.unlink()

    def _inside(self, uri: str) -> ObjectStoragePath:
        """A file of the checkpoint, through the job root (links refused); anything else is refused."""
        if uri != self.uri and not uri.startswith(self.uri + "/"):
            raise StateGateError(f"refusing to read {uri}: it is outside the checkpoint {self.uri}")
        below = uri[len(self.uri):].strip("/")
        return fresh(self.job.state_path(*self.parts, *(below.split("/") if below else ())))

    def _path(self, uri: str) -> ObjectStoragePath:
        """A checkpoint file, or a source file as Spark named it (``s3a://`` is the store's ``s3://``)."""
        if uri == self.uri or uri.startswith(self.uri + "/"):
            return self._inside(uri)
        return fresh(ObjectStoragePath(re.sub(r"^s3[an]://", "s3://", uri), conn_id=self.job.conn_id))

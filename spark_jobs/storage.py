"""Files beside the checkpoint and in file sinks, through Spark's own Hadoop filesystem layer (and,
for a command that needs no Spark session, a local filesystem).

The checkpoint may live on a local disk, HDFS or an object store (``s3a://``, ``gs://``): wherever
Spark can keep its state, the guard's record and the sink's batch files must go too, with the same
credentials and configuration. Going through Hadoop's ``FileSystem`` of the running session gives
exactly that, instead of a second filesystem client with settings of its own.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession


@dataclass
class HadoopStorage:
    """A thin, typed door onto ``org.apache.hadoop.fs.FileSystem`` for one Spark session.

    Every call crosses to the JVM, and a micro-batch's writer makes dozens. Classes are named whole
    (:meth:`_class`), and the configuration is looked up once per instance."""

    spark: SparkSession

    @property
    def _gateway(self) -> Any:
        """The session's py4j gateway: how Python reaches Hadoop's classes in the JVM."""
        gateway = self.spark.sparkContext._gateway
        if gateway is None:
            raise RuntimeError("the Spark session is stopped")
        return gateway

    def _class(self, name: str) -> Any:
        """The JVM class of fully qualified ``name``, with no round trip. Reached through the
        gateway's ``jvm.org.apache...`` instead, each package on the way is a question to the JVM,
        which first searches every jar on its class path for a class of that name."""
        return JavaClass(name, self._gateway._gateway_client)

    @cached_property
    def _path_class(self) -> Any:
        return self._class("org.apache.hadoop.fs.Path")

    @cached_property
    def _conf(self) -> Any:
        return self.spark.sparkContext._jsc.hadoopConfiguration()

    def _resolve(self, uri: str):
        path = self._path_class(uri)
        return path.getFileSystem(self._conf), path

    def exists(self, uri: str) -> bool:
        fs, path = self._resolve(uri)
        return bool(fs.exists(path))

    def list(self, uri: str) -> list[str]:
        fs, path = self._resolve(uri)
        return [status.getPath().toString() for status in fs.listStatus(path)] if fs.exists(path) else []

    def read_text(self, uri: str) -> str:
        fs, path = self._resolve(uri)
        stream = fs.open(path)
        try:
            return self._class("org.apache.commons.io.IOUtils").toString(stream, "UTF-8")
        finally:
            stream.close()

    def write_text(self, uri: str, text: str) -> None:
        """Write beside the target, then rename over it: readers see the old or the new text."""
        staged = f"{uri}.{self.spark.sparkContext.applicationId}.tmp"
        fs, path = self._resolve(staged)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        self.replace(staged, uri)

    def replace(self, source: str, target: str) -> None:
        """Move ``source`` to ``target``, replacing it: one atomic rename where the store has one
        (Hadoop's FileContext with OVERWRITE, as Spark's own checkpoint files), else delete + rename.

        Where ``target`` does not exist yet (all but a replayed batch), a plain rename on the
        session's cached filesystem is just as atomic, and builds no FileContext: a sink renames a
        file per task in every micro-batch (docs: benchmarks, where the time goes)."""
        from py4j.protocol import Py4JJavaError

        fs, src = self._resolve(source)
        _, dst = self._resolve(target)
        if not fs.exists(dst) and fs.rename(src, dst):
            return
        rename = self._class("org.apache.hadoop.fs.Options$Rename")
        options = self._gateway.new_array(rename, 1)
        options[0] = rename.OVERWRITE
        try:
            context = self._class("org.apache.hadoop.fs.FileContext").getFileContext(dst.toUri(), self._conf)
            context.rename(src, dst, options)
            return
        except Py4JJavaError:
            pass  # no FileContext binding for this store (many object stores): delete, then rename
        if fs.exists(dst):
            fs.delete(dst, False)
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {target}")

    def size(self, uri: str) -> int:
        fs, path = self._resolve(uri)
        return int(fs.getFileStatus(path).getLen())

    def mkdirs(self, uri: str) -> None:
        fs, path = self._resolve(uri)
        fs.mkdirs(path)

    def delete(self, uri: str) -> None:
        fs, path = self._resolve(uri)
        fs.delete(path, True)


@dataclass(frozen=True)
class LocalFiles:
    """A checkpoint on a local or mounted filesystem (a plain path or a ``file:`` URI), for a command
    that needs no Spark session: ``stop`` asks a job to stop in milliseconds, not a JVM's start."""

    @staticmethod
    def _path(uri: str) -> Path:
        return Path(re.sub(r"^file:(//)?", "", uri))

    def exists(self, uri: str) -> bool:
        return self._path(uri).exists()

    def list(self, uri: str) -> list[str]:
        folder = self._path(uri)
        return [f"{uri.rstrip('/')}/{child.name}" for child in sorted(folder.iterdir())] if folder.is_dir() else []

    def read_text(self, uri: str) -> str:
        return self._path(uri).read_text(encoding="utf-8")

    def size(self, uri: str) -> int:
        return self._path(uri).stat().st_size

    def write_text(self, uri: str, text: str) -> None:
        """Write beside the target, then move it over: readers see the old or the new text."""
        target = self._path(uri)
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        staged.write_text(text, encoding="utf-8")
        os.replace(staged, target)

    def mkdirs(self, uri: str) -> None:
        self._path(uri).mkdir(parents=True, exist_ok=True)

    def delete(self, uri: str) -> None:
        path = self._path(uri)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def is_local(uri: str) -> bool:
    """Whether ``uri`` is a local path (no scheme, or ``file:``)."""
    return uri.startswith("file:") or "://" not in uri

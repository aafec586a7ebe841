"""A fleet of streaming jobs: what each job's DAG's author fixes, read from a folder of job files.

::

    <dags folder>/stategate_redeploy.py        fleet_dags(Path(__file__).with_name("stategate_jobs"))
    <dags folder>/stategate_jobs/bids.yaml     a job's settings (:meth:`JobSpec.load`)
    <dags folder>/stategate_jobs/bids.sql      its SQL

A job file names what a DAG's author fixes: where the job's SQL is, its deployment root, the
connections, how it runs. A user who may only trigger a redeploy chooses no more than the DAG's
params allow: ``on_unknown``, ``replay`` (each validated against its allowed values); any other key
of a run's conf is refused by the gate before anything is read or written. So triggering a DAG
never reaches a file outside the job's places.

Every job gets its DAG (``stategate_<job>``, :mod:`stategate.provider.redeploy`), its own root and
its own redeploy lock: the fleet's redeploys run in parallel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from stategate.provider.hooks.deployment import OnUnknown, StateGateError
from stategate.spark_jobs.cutover import BOUNDED, REPLAY_POLICIES
from stategate.spark_jobs.triggers import AVAILABLE_NOW, interval_s

#: What a job's SQL is read from, and what its settings are written in.
SQL_SUFFIX, SPEC_SUFFIX = ".sql", ".yaml"
#: A job's DAG id.
DAG_ID = "stategate_{}"
DEPLOY_MODES = ("client", "cluster")


class JobSpecError(StateGateError):
    """A job file that is not one: what is wrong, and where."""


@dataclass(frozen=True)
class SparkSettings:
    """How the job is submitted.

    :param conn_id: the Airflow Spark connection (master, and its extras)
    :param deploy_mode: ``client`` (the driver runs where the submit task runs; an always-on job
        detaches from it) or ``cluster`` (YARN, Kubernetes: the cluster runs the driver)
    :param conf: spark-submit ``--conf`` settings
    :param packages: spark-submit ``--packages`` (connectors: Kafka, hadoop-aws, ...)
    """

    conn_id: str = "spark_default"
    deploy_mode: str = "client"
    conf: Mapping[str, str] = field(default_factory=dict)
    packages: str | None = None


@dataclass(frozen=True)
class JobSpec:
    """One job of a fleet: everything its DAG's author fixes.

    :param name: the job; its directory under ``root`` and its DAG's name
    :param sql: the job's SQL file
    :param root: the root of all jobs' deployment roots (``file:///...``, ``s3://...``)
    :param sql_dir: the directory its SQL must be read from, links resolved (default: the SQL file's)
    :param conn_id: the Airflow connection of an object-store ``root``
    :param checkpoint_root: where checkpoints and archives live, when not under ``root``
    :param schedule: when Airflow redeploys it (None: only when triggered, say by CI after a merge)
    :param trigger: ``available-now`` (each run processes what arrived, then stops) or
        ``processing-time=<interval>`` (always on: a redeploy stops it and starts the new version)
    :param on_unknown: what an UNKNOWN verdict does by default (a trigger may choose another)
    :param replay: what a clear-state re-reads by default (a trigger may choose another)
    :param spark: how it is submitted
    :param stop_timeout: seconds a redeploy waits for the running job to stop after its micro-batch
    :param healthy_within: seconds an always-on version has to commit a micro-batch once started;
        one that does not is rolled back
    """

    name: str
    sql: Path
    root: str
    sql_dir: Path | None = None
    conn_id: str | None = None
    checkpoint_root: str | None = None
    schedule: str | None = "@hourly"
    trigger: str = AVAILABLE_NOW
    on_unknown: OnUnknown = OnUnknown.APPROVE
    replay: str = BOUNDED
    spark: SparkSettings = field(default_factory=SparkSettings)
    stop_timeout: float = 300
    healthy_within: float = 600

    def __post_init__(self) -> None:
        problems = []
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.name):
            problems.append(f"name {self.name!r} must be letters, digits, '_', '.' or '-'")
        try:
            interval_s(self.trigger)
        except ValueError as error:
            problems.append(str(error))
        if self.replay not in REPLAY_POLICIES:
            problems.append(f"replay must be one of {', '.join(REPLAY_POLICIES)}, not {self.replay!r}")
        if self.spark.deploy_mode not in DEPLOY_MODES:
            problems.append(f"spark.deploy_mode must be client or cluster, not {self.spark.deploy_mode!r}")
        if problems:
            raise JobSpecError(f"job {self.name}: {'; '.join(problems)}")

    @property
    def directory(self) -> Path:
        """The place the job's SQL may be read from."""
        return self.sql_dir or self.sql.parent

    @property
    def always_on(self) -> bool:
        return self.trigger != AVAILABLE_NOW

    @classmethod
    def load(cls, path: Path) -> JobSpec:
        """The job a job file describes; its name is the file's. Refused, naming the file and the
        key, where it is not one: an unknown key is a typo that would silently change nothing."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise JobSpecError(f"{path}: cannot read the job file: {error}") from None
        if not isinstance(data, dict):
            raise JobSpecError(f"{path}: a job file is a mapping of settings (sql, root, ...)")
        spark = data.pop("spark", None) or {}
        unknown = sorted(set(data) - _KEYS) + sorted(f"spark.{k}" for k in set(spark) - _SPARK_KEYS)
        if unknown or not isinstance(spark, dict):
            raise JobSpecError(f"{path}: unknown setting(s) {', '.join(unknown) or 'spark'} "
                               f"(a job file takes {', '.join(sorted(_KEYS))} and spark: {', '.join(sorted(_SPARK_KEYS))})")
        for key in ("sql", "root"):
            if not isinstance(data.get(key), str):
                raise JobSpecError(f"{path}: '{key}' is required (text)")
        try:
            return cls(
                name=path.stem, sql=path.parent / data["sql"], root=data["root"], sql_dir=path.parent,
                conn_id=data.get("conn_id"), checkpoint_root=data.get("checkpoint_root"),
                schedule=data.get("schedule", "@hourly"), trigger=str(data.get("trigger", AVAILABLE_NOW)),
                on_unknown=OnUnknown(data.get("on_unknown", OnUnknown.APPROVE.value)),
                replay=str(data.get("replay", BOUNDED)),
                spark=SparkSettings(spark.get("conn_id", "spark_default"), spark.get("deploy_mode", "client"),
                                    {str(k): str(v) for k, v in (spark.get("conf") or {}).items()},
                                    spark.get("packages")),
                stop_timeout=float(data.get("stop_timeout", 300)),
                healthy_within=float(data.get("healthy_within", 600)))
        except (ValueError, JobSpecError) as error:  # a setting's type, or what the job refuses of it
            raise JobSpecError(f"{path}: {error}") from None


_KEYS = {"sql", "root", "conn_id", "checkpoint_root", "schedule", "trigger", "on_unknown", "replay", "stop_timeout",
         "healthy_within"}
_SPARK_KEYS = {"conn_id", "deploy_mode", "conf", "packages"}

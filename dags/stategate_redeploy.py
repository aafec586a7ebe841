"""Safe redeploys of Spark Structured Streaming window jobs: one Airflow DAG per job of a fleet.

Each job is a file in ``stategate_jobs/`` beside this one: its settings in ``<job>.yaml`` (where
its SQL is, its deployment root and connections, its schedule, how it runs) and its SQL, read from
that folder only. Its DAG, ``stategate_<job>`` (:mod:`stategate.provider.redeploy`), lets the gate
decide every redeploy. A user who may trigger a DAG chooses ``on_unknown`` and ``replay`` only; the
rest is the job file's (:mod:`stategate.provider.fleet`). A job of one's own outside this folder:
``redeploy_dag(JobSpec(name=..., sql=Path(...), root=...))`` in a DAG file of its own.
"""

from __future__ import annotations

from pathlib import Path

from stategate.provider.redeploy import fleet_dags

globals().update(fleet_dags(Path(__file__).with_name("stategate_jobs")))

"""A parallelism change that keeps its state: a query's state carried to the job's number of state
partitions before the query starts.

Spark keeps a checkpoint's number of state partitions (``spark.sql.shuffle.partitions``) for its
life: a restart reads it from the offset log, whatever the job now says. Spark 4.2 repartitions a
stopped query's state offline: after the last committed batch N it plans batch N+1 with batch N's
offsets and the new number, rewrites batch N's state into the new partitions as batch N+1's, and
commits it. That batch reads no input, and the offset and commit logs are Spark's own record of
the step, so a job killed during it finishes it on its next start (:func:`carry_partitions` asks
Spark to retry it, to the same number, before anything else). The slice log of HOP and CUMULATE
windows (:mod:`spark_jobs.assembly`) is read whole into each batch, so it needs no repartitioning.

Spark repartitions RocksDB state only: the HDFS-backed store keeps the checkpoint's number, and the
analyzer says so before a redeploy (``stategate.setting.parallelism``, INCOMPATIBLE). Nor does it
repartition behind a micro-batch that was planned and never committed (a job killed in the middle
of one), unless told to skip that batch, which could write its rows into an exactly-once sink
twice. So such a query runs on at its old number, finishing that batch as any restart does, and is
repartitioned at its next start; the log says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import SparkSession

from stategate.analyzer.settings import ROCKSDB
from stategate.spark_jobs.checkpoint import OFFLINE_UNREADABLE, QueryLog
from stategate.spark_jobs.storage import HadoopStorage

log = logging.getLogger("stategate.rescale")



@dataclass(frozen=True)
class Repartitioned:
    """One repartition of a query's state: from ``before`` partitions to ``after``, as ``batch``."""

    query: str
    before: int | None
    after: int
    batch: int

    def describe(self) -> str:
        return (f"the state of {self.query} repartitioned from {self.before} to {self.after} partitions "
                f"(micro-batch {self.batch}, which reads no input)")


def carry_partitions(spark: SparkSession, storage: HadoopStorage, location: str, partitions: int) -> list[Repartitioned]:
    """Carry the state of the query at ``location`` to ``partitions`` state partitions: first a
    repartition a killed job left unfinished, then one to ``partitions`` where the state stands at
    another number. What was done, in order; nothing for a query without state, and nothing (logged)
    where the state cannot be repartitioned now: HDFS-backed state, a batch that never committed, a
    path Spark's offline tools cannot open."""
    query = QueryLog(storage, location)
    committed = query.committed()
    if not query.holds_state() or not committed:
        return []
    planned = query.planned()
    done = []
    last, before = query.batch(planned[-1]), query.batch(planned[-1] - 1)
    assert last is not None
    if last.batch > committed[-1]:
        if before is None or last.state_partitions is None or last.state_partitions == before.state_partitions:
            if last.state_partitions != partitions:
                log.warning("%s keeps its %s state partitions until its next start: its micro-batch %d was planned "
                            "and never committed, and runs again first", location, last.state_partitions, last.batch)
            return []
        done.append(_repartition(spark, query, before.state_partitions, last.state_partitions))
    standing = query.batch(query.committed()[-1])
    assert standing is not None
    if standing.state_partitions in (None, partitions):
        return done
    if standing.state_store != ROCKSDB:
        log.warning("%s keeps its %s state partitions: Spark repartitions RocksDB state only, not %s",
                    location, standing.state_partitions, standing.state_store)
        return done
    if OFFLINE_UNREADABLE.search(location):
        log.warning("%s keeps its %s state partitions: Spark's offline repartition finds no checkpoint at a path "
                    "with any of %s in it", location, standing.state_partitions,
                    OFFLINE_UNREADABLE.pattern[1:-1])
        return done
    done.append(_repartition(spark, query, standing.state_partitions, partitions))
    return done


def _repartition(spark: SparkSession, query: QueryLog, before: int | None, after: int) -> Repartitioned:
    # PySpark 4.2's accessor of Spark's StreamingCheckpointManager (experimental, not yet public).
    spark._streamingCheckpointManager.repartition(query.location, after)
    done = Repartitioned(query.location, before, after, query.committed()[-1])
    log.info("%s", done.describe())
    return done

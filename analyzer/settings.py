"""What a job's ``SET`` statements mean on Spark: one table, and which of them fix the state.

A Flink job says how it runs with ``SET``: its parallelism, its state backend, and knobs of Flink's
own runtime. stategate runs the job on Spark, so each setting either maps onto a Spark SQL setting
(:data:`FLINK_TO_SPARK`), is a Spark setting already (``spark.*``), is read by stategate or the
analyzer (``stategate.*``, ``table.exec.emit.*``), or has no meaning on Spark: the report names it
(:func:`ignored`), never silently.

Two of them are fixed for the life of a checkpoint. Spark stores the number of state partitions
(``spark.sql.shuffle.partitions``) and the state store provider in the checkpoint's offset log and
reuses them on every restart, whatever the job now says; Flink rescales its key groups instead. So
the parallelism and the state backend, as they take effect, are part of the state's layout
(:func:`state_settings`): a new state backend is honoured only with new state, and a new parallelism
by repartitioning RocksDB state before the restart (``spark_jobs.rescale``; Spark repartitions no
other store).
"""

from __future__ import annotations

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import JobModel

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
STATE_STORE = "spark.sql.streaming.stateStore.providerClass"
#: stategate's own number of state partitions where the job sets none (the session's default).
DEFAULT_PARTITIONS = "4"
_STATE_STORES = "org.apache.spark.sql.execution.streaming.state."
ROCKSDB = _STATE_STORES + "RocksDBStateStoreProvider"
HDFS_BACKED = _STATE_STORES + "HDFSBackedStateStoreProvider"
#: Flink's state backends (``state.backend.type``, and the older ``state.backend`` names) as Spark's
#: state store providers: RocksDB on disk, or state on the heap with snapshots in the checkpoint.
STATE_BACKENDS = {"rocksdb": ROCKSDB, "hashmap": HDFS_BACKED, "filesystem": HDFS_BACKED, "jobmanager": HDFS_BACKED}
#: Flink settings with a Spark meaning, in order of precedence (the later wins): the Spark setting
#: each becomes. ``spark.*`` written in the job win over all of them.
FLINK_TO_SPARK = {
    "parallelism.default": SHUFFLE_PARTITIONS,
    "table.exec.resource.default-parallelism": SHUFFLE_PARTITIONS,
    "state.backend": STATE_STORE,
    "state.backend.type": STATE_STORE,
}
#: Settings stategate and its analyzer read themselves.
OWN_PREFIXES = ("stategate.", "table.exec.emit.")


def spark_settings(model: JobModel) -> dict[str, str]:
    """The Spark SQL settings the job's ``SET`` statements ask for (not the session's defaults)."""
    found: dict[str, str] = {}
    for key, target in FLINK_TO_SPARK.items():
        if key in model.settings:
            value = _spark_value(model, key, target)
            if value is not None:
                found[target] = value
    found.update({key: value for key, value in model.settings.items() if key.startswith("spark.")})
    return found


def state_settings(model: JobModel) -> dict[str, str]:
    """The settings a checkpoint keeps for its life, as they take effect: the number of state
    partitions and the state store provider."""
    spark = spark_settings(model)
    return {SHUFFLE_PARTITIONS: spark.get(SHUFFLE_PARTITIONS, DEFAULT_PARTITIONS),
            STATE_STORE: spark.get(STATE_STORE, HDFS_BACKED)}


def reseeds_partitions(old: JobModel, new: JobModel) -> bool:
    """Whether a restart of ``old``'s state as ``new`` changes the number of state partitions of a
    store Spark does not repartition (any but RocksDB): the state can then go on only re-seeded
    into new state at the new number (:mod:`analyzer.reseed`)."""
    before, after = state_settings(old), state_settings(new)
    return before[SHUFFLE_PARTITIONS] != after[SHUFFLE_PARTITIONS] and before[STATE_STORE] == after[STATE_STORE] \
        and after[STATE_STORE] != ROCKSDB


def written_as(model: JobModel, target: str) -> str:
    """How the job sets ``target``: the ``SET`` that takes effect, or stategate's default."""
    keys = [key for key, to in FLINK_TO_SPARK.items() if to == target and key in model.settings]
    key = target if target in model.settings else keys[-1] if keys else None
    return f"SET '{key}' = '{model.settings[key]}'" if key else "(stategate's default)"


def ignored(model: JobModel) -> list[str]:
    """The job's settings that mean nothing on Spark: the job runs without them."""
    return sorted(key for key in model.settings
                  if key not in FLINK_TO_SPARK and not key.startswith(("spark.", *OWN_PREFIXES)))


def _spark_value(model: JobModel, key: str, target: str) -> str | None:
    value = model.settings[key].strip()
    if target == SHUFFLE_PARTITIONS:
        if value == "-1" and key == "table.exec.resource.default-parallelism":
            return None  # Flink's "use parallelism.default"
        if not value.isdigit() or int(value) < 1:
            raise SQLModelError(f"SET '{key}' = '{value}': a parallelism is a whole number of at least 1",
                                source=model.source)
        return str(int(value))
    backend = STATE_BACKENDS.get(value.lower())
    if backend is None:
        raise SQLModelError(f"SET '{key}' = '{value}': Spark runs the state backends "
                            f"{', '.join(sorted(STATE_BACKENDS))}", source=model.source)
    return backend

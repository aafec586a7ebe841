"""The retained slices of HOP and CUMULATE as deltas and bases: what each batch writes, reads and drops."""

from __future__ import annotations

from pyspark.sql import types as T

from stategate.spark_jobs.assembly import BASE_EVERY, SLICES_DIR, SliceLog
from stategate.spark_jobs.storage import HadoopStorage

SCHEMA = T.StructType([T.StructField("k", T.StringType()), T.StructField("n", T.IntegerType())])


def test_a_batch_writes_what_it_adds_and_all_it_retains_every_so_often(spark, tmp_path) -> None:
    log = SliceLog(HadoopStorage(spark), str(tmp_path), SLICES_DIR)
    batches = 2 * BASE_EVERY + 5
    for batch in range(batches):
        entries = log.read_by(batch)
        retained = log.retained(entries, SCHEMA)
        assert (0 if retained is None else retained.count()) == batch, "every slice the batches before kept"
        added = spark.createDataFrame([(f"k{batch}", batch)], SCHEMA)
        log.write(batch, entries, added, added if retained is None else retained.unionByName(added))
        log.drop_before(entries)

    # Batches 0 to 9 wrote their own slices; batch 10, which read ten entries, all it retained; and
    # so on. What a batch reads: the latest base before it and the deltas since.
    folder = tmp_path / SLICES_DIR
    base = 2 * BASE_EVERY
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == \
        [str(base), *(f"{n}.delta" for n in range(base + 1, batches))], "the entries before the base are gone"
    assert log.read_by(batches) == [(base, True), *((n, False) for n in range(base + 1, batches))]
    assert spark.read.parquet(str(folder / f"{base + 1}.delta")).count() == 1, "a delta holds its batch's own"
    assert spark.read.parquet(str(folder / str(base))).count() == base + 1
    # A replay of the last batch reads the same entries and writes the same kind of entry.
    assert log.read_by(batches - 1) == log.read_by(batches)[:-1]
    assert sorted(r.k for r in log.retained(log.read_by(batches), SCHEMA).collect()) == \
        sorted(f"k{n}" for n in range(batches))

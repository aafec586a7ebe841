"""The retained slices of HOP and CUMULATE as deltas and bases: what each batch writes, reads and drops."""

from __future__ import annotations

from pyspark.sql import types as T

from stategate.analyzer.windows import Cumulate, Hop
from stategate.spark_jobs.assembly import BASE_EVERY, SLICES_DIR, SliceLog, WindowAssembler
from stategate.spark_jobs.slicing import SharedSlices
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


def test_a_batch_opens_no_entry_whose_windows_have_all_closed(spark, tmp_path) -> None:
    """Every slice of the entry batch N wrote ended by N's watermark, so it counts in no window
    ending W(N) + the window's size or later: once the watermark is past that, the entry is not
    read (a short window read one file a batch would otherwise read up to ten entries to keep one)."""
    minute = 60_000
    watermarks = {0: 0, 1: 5 * minute, 2: 12 * minute, 3: 20 * minute}
    for batch, watermark in watermarks.items():  # Spark's offset log: the version line, then the batch's metadata
        (tmp_path / "offsets").mkdir(exist_ok=True)
        (tmp_path / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":{watermark},"batchTimestampMs":0}}\n')
    entries = [(0, True), (1, False), (2, False), (3, False), (4, False)]  # 4: no offset log to judge it by
    hop = WindowAssembler(SharedSlices(Hop(slide_ms=minute, size_ms=10 * minute), True), [], [], str(tmp_path))
    storage = HadoopStorage(spark)
    # Batch 4 reads from W(3) = 20 min: entries 0 (windows end before 10 min) and 1 (15 min) hold
    # nothing it needs; entry 2's slices count in windows up to 22 min.
    assert hop.needed(storage, entries, 20 * minute) == [(2, False), (3, False), (4, False)]
    assert hop.needed(storage, entries, 15 * minute) == [(2, False), (3, False), (4, False)], "ends before 15 min"
    assert hop.needed(storage, entries, 14 * minute) == [(1, False), (2, False), (3, False), (4, False)]
    assert hop.needed(storage, entries, None) == entries, "the first batch reads all there is"
    day = WindowAssembler(SharedSlices(Cumulate(step=minute, size_ms=1440 * minute), False), [], [], str(tmp_path))
    assert day.needed(storage, entries, 20 * minute) == entries, "a day-long window keeps every entry open"

"""Stage 2 of HOP and CUMULATE: windows assembled per micro-batch from the retained slices.

Stage 1 (a native streaming aggregation) emits each slice once the watermark passes its end. In
micro-batch ``N`` the watermark moved from ``W(N-1)`` to ``W(N)`` (both from Spark's offset log),
so exactly the windows ending in ``(W(N-1), W(N)]`` are complete: all their slices have been
emitted, in this batch or before. They are combined from the slices of this batch and the slices
retained from earlier ones; a slice is retained while a window ending after ``W(N)`` still holds
it. The retained slices are side state beside the query's checkpoint (:class:`SliceLog`): each batch
writes the slices it adds, and every few batches all it retains, as Spark's own state store writes
deltas and snapshots. A batch replayed after a crash reads what the batches before it wrote again
and rewrites its own, so its windows are the same (exactly once with the file sinks).

Why this mechanism: each slice meets only the windows that end in this batch's watermark advance, so
the work per window is linear in the slices it covers and per record nothing depends on size /
slide; the slices that meet a closing window move once, to the partition of their group, and meet
their windows there. What the alternatives cost (Spark's ``window()`` over the slices, a
``transformWithState`` of slices, running aggregates, partial pre-combining) is measured in the
docs: benchmarks, "Why the engine is shaped so".
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from stategate.spark_jobs import state
from stategate.spark_jobs.checkpoint import QueryLog
from stategate.spark_jobs.slicing import SharedSlices
from stategate.spark_jobs.state import GROUPING_SET, Slot
from stategate.spark_jobs.storage import HadoopStorage

#: Beside a query's checkpoint files: the retained slices (:class:`SliceLog`).
SLICES_DIR = "stategate-slices"


def slices_dir(branch: int) -> str:
    """The directory of the retained slices of a window join's ``branch`` (0: of the query's only
    window but in a join)."""
    return SLICES_DIR if branch == 0 else f"{SLICES_DIR}-{branch}"

#: How many of the slice log's entries a batch reads at most: the batch that would read more
#: writes all it retains instead of the slices it adds, and the entries before it can go.
BASE_EVERY = 10


@dataclass(frozen=True)
class WindowAssembler:
    """Turns a micro-batch of closed slices into the windows the batch closes."""

    slicer: SharedSlices
    slots: Sequence[Slot]
    keys: Sequence[str]
    location: str  # the query's checkpoint directory
    slices: str = SLICES_DIR  # the snapshots' directory in it (one per assembled input of a window join)
    #: The watermark each batch evicted with (ms; from the offset log, read once a process), by batch,
    #: for the batches whose slice-log entries are still read: what :meth:`needed` judges them by.
    _watermarks: dict[int, int | None] = field(default_factory=dict, compare=False, repr=False)

    @contextmanager
    def __call__(self, slices: DataFrame, batch_id: int) -> Iterator[DataFrame]:
        """The windows the batch closes, readable until the ``with`` block ends: the pool of slices
        they are combined from stays cached until then, so the batch's writer computes them in its
        own action (materializing them first took a Spark job more, about 140 ms a batch). Their
        plan must read the pool once: where it read the cached pool twice, Spark ran stage 1, the
        stateful aggregation, again for the second read (tests/spark_jobs/test_assembly.py counts
        the state updates of each batch)."""
        storage = HadoopStorage(slices.sparkSession)
        low, high = self._watermark(storage, batch_id - 1), self._watermark(storage, batch_id)
        log = SliceLog(storage, self.location, self.slices)
        plan = self._plan
        added = slices.select(*plan.group, plan.slice, *plan.pooled)
        # A field an entry lacks (an aggregate added at a restart takes a slot no retained slice
        # has values in) reads as null, as its slot's state does.
        entries = log.read_by(batch_id)
        retained = log.retained(self.needed(storage, entries, low), added.schema)
        if retained is not None and low is not None:  # an entry's slices whose windows all closed
            retained = retained.where(plan.last_end > F.lit(low * 1000))
        # The batch's own slices are told apart in the cached pool: writing them from ``added`` would
        # run stage 1 again.
        added = added.withColumn(_ADDED, F.lit(True))
        pool = (added if retained is None else retained.withColumn(_ADDED, F.lit(False)).unionByName(added)).persist()
        try:
            kept = pool.where(plan.last_end > F.lit((high or 0) * 1000))
            log.write(batch_id, entries, kept.where(F.col(_ADDED)).drop(_ADDED), kept.drop(_ADDED))
            yield self._windows(pool, low, high)
        finally:
            pool.unpersist()
        log.drop_before(entries)

    def shaped(self, slices: DataFrame) -> DataFrame:
        """Slices with the columns of the windows they are assembled into (the pool's): what a
        batch's plan is analysed over before any batch runs."""
        plan = self._plan
        return slices.select(*plan.group, plan.slice, *plan.pooled)

    def needed(self, storage: HadoopStorage, entries: list[tuple[int, bool]], low: int | None) -> list[tuple[int, bool]]:
        """The ``entries`` that can hold a slice of a window ending after ``low``: the others are not
        read. Batch ``N`` emits a slice once its watermark ``W(N)`` passes the slice's end, and a slice
        counts in no window ending past its start plus the window's size, so every slice of the entry
        batch ``N`` wrote (its own, or all it retained) lies in windows ending before ``W(N)`` plus
        the size. A day-long window keeps its entries open; a short one, read one file a batch at
        the production size (HOP 10 min / 1 min, 100k keys: 100k slices an entry), would otherwise
        read up to :data:`BASE_EVERY` entries a batch to keep the one or two the next windows need.
        ``W(N)`` comes from Spark's offset log, as the batch's own does, so a replayed batch reads
        the same entries."""
        if low is None:
            return entries
        seen = self._watermarks
        for n in [n for n in seen if n < (entries[0][0] if entries else 0)]:
            del seen[n]  # entries a base replaced are never read again
        size = self.slicer.kind.size_ms
        return [(n, base) for n, base in entries
                if (written := self._watermark(storage, n)) is None or written + size > low]

    def _watermark(self, storage: HadoopStorage, batch_id: int) -> int | None:
        """The watermark batch ``batch_id`` evicted with, read once a process: the batch before this
        one is the one whose entry it reads first."""
        if batch_id not in self._watermarks:
            self._watermarks[batch_id] = QueryLog(storage, self.location).watermark(batch_id)
        return self._watermarks[batch_id]

    @cached_property
    def _plan(self) -> _AssemblyPlan:
        """The batch-independent columns, built once: each column is a round trip to the JVM (a
        column named by a string too), which every micro-batch would pay again (docs: benchmarks,
        where the time goes)."""
        start, end = F.unix_micros(F.col("w.start")), F.unix_micros(F.col("w.end"))
        last_end = self.slicer.last_end(start)
        first = F.greatest(self.slicer.first_end(end), F.col(_LOW))
        last = F.least(last_end, F.col(_HIGH))
        end = F.col(_END)
        ends = F.explode(F.sequence(first, last, F.lit(self.slicer.step_us))).alias(_END)
        values = [name for name, _ in state.window_fields(self.slots)]
        pooled = state.pooled(self.slots)
        window = F.struct(F.timestamp_micros(self.slicer.start_of(end)).alias("start"),
                          F.timestamp_micros(end).alias("end"))
        order = (-start if self.slicer.latest_first else start).alias(_SLICE)
        group = [F.col(name) for name in (*self.keys, GROUPING_SET)]
        return _AssemblyPlan(group, F.col("w"), [F.col(name) for name in values], pooled, last_end, first <= last,
                             ends, end, order, state.combine(self.slots, _SLICE), window.alias("w"))

    def _windows(self, pool: DataFrame, low: int | None, high: int | None) -> DataFrame:
        if high is None:
            return pool.limit(0)
        plan = self._plan
        kind = self.slicer.kind
        # The window ends in (low, high]: each slice meets those of its windows that this batch closes.
        first = _NO_END if low is None else kind.last_end_at_ms(low) + kind.step_ms
        bounds = pool.select("*", F.lit(first * 1000).alias(_LOW), F.lit(kind.last_end_at_ms(high) * 1000).alias(_HIGH))
        # Each slice that counts in a window the batch closes moves once, to the partition of its
        # group, and meets its windows there: the aggregation then needs no shuffle of its own,
        # which moved each slice once per window (ten times over for HOP 10 min / 1 min).
        meeting = bounds.where(plan.meets).repartition(*plan.group)
        pairs = meeting.select(*plan.group, *plan.values, plan.slice_order, plan.ends)
        with state.wrapping_sums(pairs.sparkSession):  # the slices' sums add up as Flink's do
            windows = pairs.groupBy(*plan.group, plan.end).agg(*plan.combined)
        return windows.select(*plan.group, plan.window, *plan.values)


@dataclass(frozen=True)
class _AssemblyPlan:
    group: list[Column]  # the keys and the grouping set
    slice: Column  # a slice's bounds
    values: list[Column]  # what a retained slice keeps beside its keys and slice: the fields the query reads
    pooled: list[Column]  # those fields of a slice of stage 1 as the pool keeps them (state.pooled)
    last_end: Column  # of a slice: the last window end that holds it (microseconds)
    meets: Column  # of a slice: whether a window that holds it closes in the batch
    ends: Column  # of a slice that meets one: the ends of the windows that hold it and that the batch closes
    end: Column  # of a slice with one of those ends: that end
    slice_order: Column  # of a slice: where it stands among a window's slices as Flink merges them
    combined: list[Column]  # the aggregation of a window's slices
    window: Column  # an assembled window's bounds, from its end


#: Per batch, the first and the last window end it closes (microseconds), as columns of the pool.
_LOW, _HIGH = "_low", "_high"
#: Of a slice meeting its windows: the end of one of them (microseconds).
_END = "_end"
#: Of a slice meeting its windows: its place in their merge order (``_AssemblyPlan.slice_order``).
_SLICE = "_slice"
#: In the pool: whether a slice is the batch's own (or retained from an earlier one).
_ADDED = "_added"
#: Before every window end: the first batch closes every window up to its watermark.
_NO_END = -(1 << 62) // 1000


@dataclass(frozen=True)
class SliceLog:
    """The retained slices beside a query's checkpoint, as Spark keeps a state store: deltas and bases.

    Batch ``N`` writes the slices it adds that a later window still holds (``<directory>/<N>.delta``),
    and reads the latest base before it with the deltas since. A slice never changes once stage 1
    emitted it, so a batch writes in proportion to its own input, not to all it retains; a slice
    whose windows have all closed is dropped as it is read. The batch that would read more than
    :data:`BASE_EVERY` entries writes all it retains instead (``<directory>/<N>``, a base), and the
    entries before the latest base a batch reads are deleted after it. What a batch reads and which
    entry it writes depend only on the entries before it, so a replayed batch reads and writes the
    same. (Checkpoints of earlier versions hold one base per batch: the same layout.)
    """

    storage: HadoopStorage
    location: str  # the query's checkpoint directory
    directory: str

    def retained(self, entries: list[tuple[int, bool]], schema: StructType) -> DataFrame | None:
        """What ``entries`` (:meth:`read_by`) hold (None: no entry), in ``schema``: given rather than
        inferred from the files' footers (about 60 ms a read), a column an entry lacks reads as null."""
        paths = self.paths(entries)
        return self.storage.spark.read.schema(schema).parquet(*paths) if paths else None

    def paths(self, entries: list[tuple[int, bool]]) -> list[str]:
        """Where ``entries`` (:meth:`read_by`) are."""
        return [self._path(n, base) for n, base in entries]

    def write(self, batch_id: int, entries: list[tuple[int, bool]], added: DataFrame, retained: DataFrame) -> None:
        """Write the batch's entry: the slices it adds, or all it retains (a base) where it read
        :data:`BASE_EVERY` ``entries`` or more."""
        base = len(entries) >= BASE_EVERY
        (retained if base else added).write.mode("overwrite").parquet(self._path(batch_id, base))

    def drop_before(self, entries: list[tuple[int, bool]]) -> None:
        """Delete what is older than the base a batch read (its ``entries``): no replay of that
        batch or of a later one reads it."""
        if entries and entries[0][1]:
            for n, base in self._entries():
                if n < entries[0][0]:
                    self.storage.delete(self._path(n, base))

    def read_by(self, batch_id: int) -> list[tuple[int, bool]]:
        """The entries batch ``batch_id`` reads, as (batch, whether a base): the latest base before
        it and the deltas after that."""
        before = [(n, base) for n, base in self._entries() if n < batch_id]
        bases = [n for n, base in before if base]
        return [(n, base) for n, base in before if n >= (bases[-1] if bases else -1)]

    def _entries(self) -> list[tuple[int, bool]]:
        """(batch, whether it is a base) of every entry, in batch order."""
        found = []
        for path in self.storage.list(f"{self.location}/{self.directory}"):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name.isdigit() or (name.endswith(".delta") and name.removesuffix(".delta").isdigit()):
                found.append((int(name.removesuffix(".delta")), name.isdigit()))
        return sorted(found)

    def _path(self, batch_id: int, base: bool) -> str:
        return f"{self.location}/{self.directory}/{batch_id}{'' if base else '.delta'}"


@dataclass(frozen=True)
class BatchSnapshots:
    """Side state beside a query's checkpoint, one snapshot per micro-batch (``<directory>/<N>``):
    batch ``N`` reads what ``N - 1`` kept and writes what it keeps, so a batch replayed after a
    crash reads the same snapshot again and rewrites its own. Older snapshots are dropped once the
    batch is written."""

    storage: HadoopStorage
    location: str  # the query's checkpoint directory
    directory: str

    def previous(self, batch_id: int, schema: StructType) -> DataFrame | None:
        """What batch ``batch_id - 1`` kept (None before the first), in ``schema``: given rather than
        inferred from the files' footers (about 60 ms a read), a column it lacks reads as null."""
        path = self._path(batch_id - 1)
        return self.storage.spark.read.schema(schema).parquet(path) if self.storage.exists(path) else None

    def write(self, batch_id: int, kept: DataFrame) -> None:
        kept.write.mode("overwrite").parquet(self._path(batch_id))

    def drop_before(self, batch_id: int) -> None:
        """Drop the snapshot no replay of ``batch_id`` or later reads any more."""
        old = self._path(batch_id - 2)
        if self.storage.exists(old):
            self.storage.delete(old)

    def _path(self, batch_id: int) -> str:
        return f"{self.location}/{self.directory}/{batch_id}"

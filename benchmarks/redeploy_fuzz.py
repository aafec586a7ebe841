"""Redeploy fuzz: random changes to window jobs, each redeployed on its job's checkpoint as its
verdict says, compared with runs that were never redeployed.

Each round draws a job of one of four shapes (a window aggregation of any kind, with GROUPING SETS
now and then; a cascade of two windows; an aggregation of whole windows; a window join) and a
change to it: aggregates added, dropped, reordered or replaced (at either level of a cascade, on
either side of a join), a window resized or of another kind, a group key computed otherwise. The
old version runs over the first bid files, one a micro-batch, then the new one over the rest:

* FULL, PARTIAL, or UNKNOWN accepted by a human: restarted on the same checkpoint, re-seeded where
  its state layout needs it. It emits each window the old version did not, every aggregate both
  versions compute as an uninterrupted run of the new version has it, and an added one as a run
  over the later files alone has it (it starts from zero at the restart; not compared in a
  cascade or over whole windows, where an added outer call takes the upstream windows closing
  after the restart whole);
* INCOMPATIBLE: the checkpoint archived (as the gate's clear-state moves it) and the new version
  taking over from it, reading again only what its open windows need: it emits every window ending
  after the cutover watermark, each as an uninterrupted run of the new version has it.

Half the rounds keep their state in RocksDB. Prints each round's verdict and what it compared, then
the totals; exits 1 on any difference.

    .venv/bin/python benchmarks/redeploy_fuzz.py [--rounds 30] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stategate.analyzer import Verdict, compare
from stategate.analyzer.errors import SQLModelError
from stategate.spark_jobs.guard import CheckpointRefused
from stategate.spark_jobs.job import RunResult
from stategate.spark_jobs.session import get_session
from tests.spark_jobs.helpers import CLOSER, bid_ddl, collect_run

#: Aggregates of the bids, for a window aggregation's SELECT list.
AGGREGATES = ("SUM(price)", "COUNT(*)", "COUNT(item)", "MAX(price)", "MIN(bidtime)", "AVG(price)",
              "COUNT(DISTINCT item)", "SUM(price) FILTER (WHERE price > 3)", "STDDEV_POP(price)",
              "FIRST_VALUE(item)", "LAST_VALUE(price)", "LISTAGG(item)", "MAX(item)", "SUM(DISTINCT price)",
              "VAR_SAMP(price)", "ARRAY_AGG(item)", "MIN(price) FILTER (WHERE item <> 'A')", "COLLECT(item)",
              "MAX(CAST(price AS DOUBLE))", "APPROX_COUNT_DISTINCT(item)", "JSON_ARRAYAGG(item)")
#: Numeric aggregates, for what a cascade's or a join's next step reads.
NUMERIC = ("SUM(price)", "COUNT(*)", "MAX(price)", "MIN(price)", "SUM(price) FILTER (WHERE price > 3)", "COUNT(item)")
#: The outer calls over an upstream window's column ``{x}``.
OUTER = ("SUM({x})", "MAX({x})", "MIN({x})", "AVG({x})", "SUM({x}) FILTER (WHERE {x} > 2)")
WINDOWS = {"tumble": ("TUMBLE(TABLE {t}, DESCRIPTOR({c}), INTERVAL '10' MINUTES)",
                      "TUMBLE(TABLE {t}, DESCRIPTOR({c}), INTERVAL '15' MINUTES)"),
           "hop": ("HOP(TABLE {t}, DESCRIPTOR({c}), INTERVAL '5' MINUTES, INTERVAL '15' MINUTES)",
                   "HOP(TABLE {t}, DESCRIPTOR({c}), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)"),
           "cumulate": ("CUMULATE(TABLE {t}, DESCRIPTOR({c}), INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)",
                        "CUMULATE(TABLE {t}, DESCRIPTOR({c}), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES)"),
           "session": ("SESSION(TABLE {t} PARTITION BY supplier_id, DESCRIPTOR({c}), INTERVAL '4' MINUTES)",
                       "SESSION(TABLE {t} PARTITION BY supplier_id, DESCRIPTOR({c}), INTERVAL '7' MINUTES)")}
#: Sessions open at a take-over are replayed whole (the default cap, an hour, would cut the longest).
SETTINGS = "SET 'stategate.replay.session-cap' = '1 d';\n"
ROCKSDB = "SET 'state.backend.type' = 'rocksdb';\n"
#: One file a micro-batch, so that a take-over's bounded replay has files to skip.
ONE_FILE_A_BATCH = ", 'spark.maxFilesPerTrigger' = '1'"
START = datetime(2020, 4, 15, 8, 0)
FILE_MINUTES = 5


@dataclass(frozen=True)
class Change:
    """Two versions of a job's SELECT (the rows keyed by their first three columns), the columns the
    new version computes as the old one did, and those it adds that count only the rows read after
    the restart."""

    shape: str
    old: str
    new: str
    kept: frozenset[int]
    added: frozenset[int]


Named = list[tuple[str, str]]  # (alias, call)


def mutated(rng: random.Random, calls: Named, pool: tuple[str, ...], prefix: str, pinned: frozenset[str] = frozenset()
            ) -> Named:
    """``calls`` after one to three changes: a call added, dropped, replaced, or the list reordered
    (never dropping nor replacing a ``pinned`` alias, which a later step reads)."""
    new = list(calls)
    for _ in range(rng.randint(1, 3)):
        operation, at = rng.choice(("add", "drop", "reorder", "replace")), rng.randrange(len(new))
        if operation == "add":
            new.insert(at, (f"{prefix}{rng.randrange(10 ** 6)}", rng.choice(pool)))
        elif operation == "reorder":
            rng.shuffle(new)
        elif new[at][0] not in pinned and (operation == "replace" or len(new) > 1):
            new[at:at + 1] = [(new[at][0], rng.choice(pool))] if operation == "replace" else []
    unique: dict[str, str] = {}
    for alias, call in new:
        unique.setdefault(alias, call)
    return list(unique.items())


def listed(calls: Named) -> str:
    return ", ".join(f"{call} AS {alias}" for alias, call in calls)


def meaning(call: str, upstream: Named) -> str:
    """An outer call with the upstream column it reads spelled as that column's own call."""
    for alias, inner in upstream:
        if f"{alias})" in call or f"{alias} " in call:
            return call.replace(alias, f"[{inner}]")
    return call


def columns(first: int, new: list[str], old: list[str]) -> tuple[frozenset[int], frozenset[int]]:
    """The positions (from ``first``) of ``new``'s calls that ``old`` computed, and of the others."""
    kept = frozenset(first + i for i, call in enumerate(new) if call in old)
    return kept, frozenset(first + i for i in range(len(new))) - kept


def aggregation(rng: random.Random) -> Change:
    kind = rng.choice(list(WINDOWS))
    sets = kind != "session" and rng.random() < 0.2
    group = "supplier_id"
    old = [(f"a{i}", call) for i, call in enumerate(rng.sample(AGGREGATES, rng.randint(2, 5)))]
    new, window = old, WINDOWS[kind][0]
    if rng.random() < 0.25:  # INCOMPATIBLE: another window, or a group key computed otherwise
        if kind == "session" or rng.random() < 0.6:
            window = WINDOWS[kind][1] if rng.random() < 0.5 else WINDOWS[rng.choice(list(WINDOWS))][0]
        else:
            group = "UPPER(supplier_id)"
    else:
        new = mutated(rng, old, AGGREGATES, "n")

    def select(calls: Named, window: str, group: str) -> str:
        keys = f"GROUPING SETS (({group}), ())" if sets else group
        return (f"SELECT window_start, window_end, {group} AS k, {listed(calls)}\n"
                f"FROM TABLE({window.format(t='Bid', c='bidtime')})\nGROUP BY window_start, window_end, {keys};")

    kept, added = columns(3, [c for _, c in new], [c for _, c in old])
    return Change("aggregation" + (" sets" if sets else ""), select(old, WINDOWS[kind][0], "supplier_id"),
                  select(new, window, group), kept, added)


def cascade(rng: random.Random, whole: bool) -> Change:
    """Five-minute windows (or any kind's, under an aggregation of whole windows) read by a second
    window (or by an aggregation of whole windows): each level's calls change, or the outer window."""
    inner = [("i0", "SUM(price)")] + [(f"i{i + 1}", c) for i, c in enumerate(rng.sample(NUMERIC, rng.randint(0, 3)))]
    outer = [(f"o{j}", rng.choice(OUTER).format(x=rng.choice(inner)[0])) for j in range(rng.randint(1, 3))]
    kind = rng.choice(list(WINDOWS))
    new_inner = mutated(rng, inner, NUMERIC, "i", frozenset(a for a, _ in inner if any(a in o for _, o in outer)))
    new_outer = mutated(rng, outer, tuple(o.format(x=a) for o in OUTER for a, _ in new_inner), "o") \
        if rng.random() < 0.6 else outer
    window = WINDOWS[kind][1] if not whole and rng.random() < 0.2 else WINDOWS[kind][0]

    def select(inner: Named, outer: Named, window: str) -> str:
        if whole:
            return (f"CREATE TEMPORARY VIEW PerSupplier AS\nSELECT supplier_id, window_start, window_end, {listed(inner)}\n"
                    f"FROM TABLE({window.format(t='Bid', c='bidtime')})\nGROUP BY supplier_id, window_start, window_end;\n"
                    f"SELECT window_start, window_end, MIN(supplier_id) AS k, COUNT(*) AS windows, {listed(outer)}\n"
                    "FROM PerSupplier\nGROUP BY window_start, window_end;")
        return (f"CREATE TEMPORARY VIEW Inner_ AS\nSELECT supplier_id, window_time, {listed(inner)}\n"
                "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))\n"
                "GROUP BY supplier_id, window_start, window_end, window_time;\n"
                f"SELECT window_start, window_end, supplier_id AS k, COUNT(*) AS windows, {listed(outer)}\n"
                f"FROM TABLE({window.format(t='Inner_', c='window_time')})\nGROUP BY window_start, window_end, supplier_id;")

    # An added outer call is not compared: it takes each upstream window that closes after the
    # restart whole (one open at the restart too, from the re-seeded state), which a run over the
    # later files alone does not have (tests/spark_jobs/test_reseed.py holds those cases).
    kept, _ = columns(4, [meaning(o, new_inner) for _, o in new_outer], [meaning(o, inner) for _, o in outer])
    return Change("whole windows" if whole else "cascade", select(inner, outer, WINDOWS[kind][0]),
                  select(new_inner, new_outer, window), kept | {3}, frozenset())


def join(rng: random.Random) -> Change:
    """Two filtered window aggregations of the bids joined on their windows: either side's calls change."""
    window = WINDOWS[rng.choice(("tumble", "hop", "cumulate"))][0].format(t="Bid", c="bidtime")
    left = [(f"l{i}", c) for i, c in enumerate(rng.sample(NUMERIC, rng.randint(1, 3)))]
    right = [(f"r{i}", c) for i, c in enumerate(rng.sample(NUMERIC, rng.randint(1, 3)))]
    which = rng.choice(("left", "right", "both"))
    new_left = mutated(rng, left, NUMERIC, "l") if which != "right" else left
    new_right = mutated(rng, right, NUMERIC, "r") if which != "left" else right

    def side(calls: Named, where: str) -> str:
        return (f"SELECT window_start, window_end, supplier_id, {listed(calls)} FROM TABLE({window}) "
                f"WHERE {where} GROUP BY window_start, window_end, supplier_id")

    def select(left: Named, right: Named) -> str:
        names = ", ".join([f"L.{a}" for a, _ in left] + [f"R.{a}" for a, _ in right])
        return (f"SELECT L.window_start, L.window_end, L.supplier_id AS k, {names}\n"
                f"FROM ({side(left, 'item < ' + repr('C'))}) L\nJOIN ({side(right, 'item >= ' + repr('C'))}) R\n"
                "ON L.supplier_id = R.supplier_id AND L.window_start = R.window_start AND L.window_end = R.window_end;")

    kept, added = columns(3, [f"L.{c}" for _, c in new_left] + [f"R.{c}" for _, c in new_right],
                          [f"L.{c}" for _, c in left] + [f"R.{c}" for _, c in right])
    return Change("window join", select(left, right), select(new_left, new_right), kept, added)


def change(rng: random.Random) -> Change:
    shape = rng.choice(("aggregation", "aggregation", "cascade", "whole", "join"))
    if shape == "aggregation":
        return aggregation(rng)
    return join(rng) if shape == "join" else cascade(rng, whole=shape == "whole")


def write_files(folder: Path, rng: random.Random, first: int, count: int, closing: bool = False) -> None:
    """``count`` files of :data:`FILE_MINUTES` minutes of bids each, modified in order (Spark's file
    source reads files oldest first); ``closing``: then a bid far ahead, which closes every window."""
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(first, first + count + int(closing)):
        if index == first + count:
            text = CLOSER
        else:
            times = sorted(START + timedelta(minutes=index * FILE_MINUTES, seconds=rng.randrange(FILE_MINUTES * 60))
                           for _ in range(rng.randint(3, 15)))
            text = "".join(f"{t:%Y-%m-%d %H:%M:%S},{rng.randrange(900) / 100:.2f},{rng.choice('ABCDE')},"
                           f"{rng.choice(('s1', 's2', 's3'))}\n" for t in times)
        path = folder / f"bids-{index:03d}.csv"
        path.write_text(text)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


def collected(spark, sql: str, checkpoint: Path, **options) -> tuple[list[tuple], RunResult]:
    """The rows ``sql`` emits, run to the end of its input, as sorted text (the closing bid's
    windows left out), and the run."""
    rows, result = collect_run(spark, sql, checkpoint, **options)
    return [row for row in rows if row[0] < CLOSER[:10]], result


def key(row: tuple) -> tuple:
    return row[:3]


def equal(a: str, b: str) -> bool:
    """The same value; floating point within 1e-12 of it (double sums added in another grouping)."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= 1e-12 * max(abs(x), abs(y))


@dataclass(frozen=True)
class Round:
    """A round's files and runs: the old version's checkpoint, the bids it read (``earlier`` files)
    and the later ones, in ``work``."""

    spark: object
    work: Path
    ddl: str
    earlier: int

    @property
    def source(self) -> Path:
        return self.work / "bids"

    def over(self, files: list[Path], name: str, sql: str) -> list[tuple]:
        """``sql`` run fresh over a copy of ``files`` only."""
        folder = self.work / name
        folder.mkdir()
        for path in files:
            shutil.copy2(path, folder / path.name)
        return collected(self.spark, self.ddl.replace(str(self.source), str(folder)) + sql, self.work / f"ck-{name}")[0]

    def restarted(self, job: Change, before: list[tuple], reference: list[tuple], totals: Counter) -> list[str]:
        """The new version restarted on the old one's checkpoint: the differences from its promise."""
        after, _ = collected(self.spark, self.ddl + job.new, self.work / "checkpoint", accept=Verdict.UNKNOWN)
        emitted = {key(row) for row in before}
        differences = []
        if [key(row) for row in after] != sorted(key(row) for row in reference if key(row) not in emitted):
            differences.append(f"windows: {sorted(({key(r) for r in after} ^ {key(r) for r in reference}) - emitted)[:4]}")
        later = sorted(self.source.iterdir())[self.earlier:]
        fresh = {key(r): r for r in self.over(later, "later", job.new)} if job.added else {}
        uninterrupted = {key(r): r for r in reference}
        for row in after:
            totals["windows compared"] += 1
            for column in sorted(job.kept) if key(row) in uninterrupted else ():
                totals["kept values compared"] += 1
                if not equal(row[column], uninterrupted[key(row)][column]):
                    differences.append(f"kept column {column}: {row} against {uninterrupted[key(row)]}")
            for column in sorted(job.added) if key(row) in fresh else ():
                totals["added values compared"] += 1
                if not equal(row[column], fresh[key(row)][column]):
                    differences.append(f"added column {column}: {row} against {fresh[key(row)]}")
        return differences

    def taken_over(self, job: Change, reference: list[tuple], totals: Counter) -> list[str]:
        """The old version's checkpoint archived, the new version taking over from it: the differences
        from its promise."""
        archive = self.work / "archive" / "checkpoint"
        archive.parent.mkdir()
        os.rename(self.work / "checkpoint", archive)
        after, result = collected(self.spark, self.ddl + job.new, self.work / "taken-over", fresh=True,
                                  take_over=str(archive))
        [cutover] = result.cutovers.values()
        seam = datetime.fromtimestamp(cutover.watermark_ms / 1000, timezone.utc).replace(tzinfo=None)
        expected = [row for row in reference if datetime.fromisoformat(row[1]) > seam]
        totals["windows compared"] += len(expected)
        totals["values compared after a take-over"] += sum(len(row) - 3 for row in expected)
        return [] if after == expected else [f"taken over after {seam}: {sorted(set(after) ^ set(expected))[:4]}"]


def fuzz_round(spark, work: Path, rng: random.Random, totals: Counter) -> list[str]:
    """One round: the differences it found (none when the redeploy kept its promise)."""
    job = change(rng)
    settings = SETTINGS + (ROCKSDB if rng.random() < 0.5 else "")
    ddl = settings + bid_ddl(work / "bids", options=ONE_FILE_A_BATCH)
    this = Round(spark, work, ddl, rng.randint(3, 5))
    try:
        verdict = compare(ddl + job.old, ddl + job.new).verdict
    except SQLModelError as error:
        totals["refused by the analyzer"] += 1
        print(f"  refused: {error}")
        return []
    print(f"  {job.shape}, {verdict.value}, {'RocksDB' if ROCKSDB in settings else 'HDFS-backed'} state", flush=True)
    data = random.Random(rng.random())
    write_files(this.source, data, 0, this.earlier)
    try:
        before, _ = collected(spark, ddl + job.old, work / "checkpoint", fresh=True)
        write_files(this.source, data, this.earlier, rng.randint(3, 5), closing=True)
        reference = this.over(sorted(this.source.iterdir()), "whole", job.new)
        if verdict is not Verdict.INCOMPATIBLE:
            try:
                differences = this.restarted(job, before, reference, totals)
                totals[verdict.value] += 1
                return differences
            except CheckpointRefused as refused:  # the deployed layout's judgement: INCOMPATIBLE
                print(f"  the restart refused: {refused}")
                totals["INCOMPATIBLE by the deployed state"] += 1
                return this.taken_over(job, reference, totals)
        totals[verdict.value] += 1
        return this.taken_over(job, reference, totals)
    except SQLModelError as error:
        totals["refused by the engine"] += 1
        print(f"  refused: {error}")
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    spark = get_session("stategate-redeploy-fuzz")
    spark.sparkContext.setLogLevel("ERROR")
    rng, totals, failed = random.Random(args.seed), Counter(), []
    started = time.perf_counter()
    for number in range(args.rounds):
        print(f"round {number}:", flush=True)
        work = Path(tempfile.mkdtemp(prefix="stategate-redeploy-fuzz-"))
        try:
            differences = fuzz_round(spark, work, rng, totals)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for difference in differences:
            print(f"  DIFFERENT: {difference}")
        failed += [number] if differences else []
    print(f"\n{args.rounds} rounds in {time.perf_counter() - started:.0f} s: "
          + ", ".join(f"{name} {count}" for name, count in totals.items()))
    print("RESULT: " + (f"DIFFERENT in rounds {failed}" if failed else "every redeploy kept its promise"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

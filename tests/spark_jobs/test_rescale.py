"""A parallelism change keeps its state: parallelism 3 → 6 → 2 on RocksDB state, every kind of window
equal to an uninterrupted run, and a repartition a killed job left unfinished is finished first; on
the HDFS-backed store, which Spark does not repartition, 3 → 6 re-seeds into new state."""

from __future__ import annotations

import json
import os
from pathlib import Path

from stategate.analyzer import Verdict
from stategate.analyzer.settings import SHUFFLE_PARTITIONS
from stategate.spark_jobs.checkpoint import RECORD_DIR, RESEEDED, QueryLog
from stategate.spark_jobs.job import RunResult
from stategate.spark_jobs.storage import LocalFiles
from tests.spark_jobs.helpers import bid_ddl, collect_pipelines
from tests.spark_jobs.test_restart import PART_A, PART_B, write

PART_C = [
    ("2020-04-15 08:33:00", "9.00", "J", "s1"),
    ("2020-04-15 08:36:00", "3.00", "K", "s2"),
    ("2020-04-15 08:52:00", "4.00", "L", "s1"),
]
SELECT = "SELECT supplier_id, window_start, window_end, COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top"
GROUP = "GROUP BY supplier_id, window_start, window_end;\n"
WINDOWS = {
    "TUMBLE": "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)",
    "HOP": "HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)",
    "CUMULATE": "CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)",
    "SESSION": "SESSION(TABLE Bid PARTITION BY supplier_id, DESCRIPTOR(bidtime), INTERVAL '4' MINUTES)",
}
#: Each window kind is a pipeline of the job, named after its sink.
PIPELINES = {f"{kind.title()}Totals": kind for kind in WINDOWS}
SINK_COLUMNS = "supplier_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, " \
               "total DECIMAL(38, 2), top DECIMAL(10, 2)"


ROCKSDB = "SET 'state.backend.type' = 'rocksdb';\n"


#: Aggregates that keep lists and sets, which Spark serializes in its state (a DISTINCT one is not
#: run over SESSION windows: a COUNT stands in).
LISTS = (", LISTAGG(item) AS items, ARRAY_AGG(price) AS prices, COUNT(DISTINCT supplier_id || item) AS d, "
         "JSON_OBJECTAGG(KEY item VALUE price) AS priced")
LIST_COLUMNS = ", items STRING, prices ARRAY<DECIMAL(10, 2)>, d BIGINT, priced STRING"


def job(source: Path, parallelism: int, store: str = ROCKSDB, lists: bool = False) -> str:
    """Every kind of window, each into its own sink (the tests' writers stand in for them)."""
    def select(kind: str) -> str:
        added = LISTS.replace("COUNT(DISTINCT", "COUNT(") if kind == "SESSION" else LISTS
        return SELECT + (added if lists else "")

    return (f"{store}SET 'parallelism.default' = '{parallelism}';\n"
            + bid_ddl(source)
            + "".join(f"CREATE TABLE {sink} ({SINK_COLUMNS}{LIST_COLUMNS if lists else ''}) "
                      "WITH ('connector' = 'print');\n"
                      f"INSERT INTO {sink}\n{select(kind)}\nFROM TABLE({WINDOWS[kind]})\n{GROUP}"
                      for sink, kind in PIPELINES.items()))


def run_job(spark, sql: str, checkpoint: Path, rows: dict[str, list]) -> RunResult:
    """Run the job, adding each pipeline's emitted rows to ``rows``."""
    collected, result = collect_pipelines(spark, sql, checkpoint, list(PIPELINES))
    for name, found in collected.items():
        rows.setdefault(name, []).extend(found)
    return result


def partitions(query: Path) -> int | None:
    """The number of state partitions the query's last committed batch ran with (a repartition to
    fewer leaves the directories of the others behind, unread)."""
    log = QueryLog(LocalFiles(), str(query))
    last = log.batch(log.committed()[-1])
    assert last is not None
    return last.state_partitions


def emitted(rows: dict[str, list]) -> dict[str, list]:
    return {PIPELINES[name]: sorted(tuple(map(str, r)) for r in found) for name, found in rows.items()}


def abandon_repartition(query: Path, to: int) -> None:
    """What a job killed right after Spark planned its repartition batch leaves: that batch's offsets
    (the last committed batch's, at ``to`` partitions), no state and no commit."""
    last = max(int(p.name) for p in (query / "commits").iterdir() if p.name.isdigit())
    version, metadata, *sources = (query / "offsets" / str(last)).read_text().splitlines()
    planned = json.loads(metadata)
    planned["conf"][SHUFFLE_PARTITIONS] = str(to)
    (query / "offsets" / str(last + 1)).write_text("\n".join([version, json.dumps(planned), *sources]))


def test_parallelism_3_6_2_keeps_every_window_equal_to_an_uninterrupted_run(spark, tmp_path) -> None:
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    rows: dict[str, list] = {}
    write(source, "a.csv", PART_A)
    assert run_job(spark, job(source, 3), checkpoint, rows).report is None
    assert {partitions(checkpoint / name) for name in PIPELINES} == {3}

    write(source, "b.csv", PART_B)
    second = run_job(spark, job(source, 6), checkpoint, rows)
    assert second.report is not None and second.report.verdict is Verdict.FULL
    assert "stategate.setting.parallelism.repartitioned" in {f.rule for f in second.report.findings}
    assert [(d.before, d.after) for d in second.repartitioned] == [(3, 6)] * len(PIPELINES)
    assert {partitions(checkpoint / name) for name in PIPELINES} == {6}

    for name in PIPELINES:  # killed in the middle of a repartition to 5, then redeployed at 2
        abandon_repartition(checkpoint / name, 5)
    write(source, "c.csv", PART_C, closer=True)
    third = run_job(spark, job(source, 2), checkpoint, rows)
    assert [(d.before, d.after) for d in third.repartitioned] == [(6, 5), (5, 2)] * len(PIPELINES)
    assert {partitions(checkpoint / name) for name in PIPELINES} == {2}

    whole: dict[str, list] = {}
    for name, part in (("a.csv", PART_A), ("b.csv", PART_B), ("c.csv", PART_C)):
        write(tmp_path / "whole", name, part, closer=name == "c.csv")
    run_job(spark, job(tmp_path / "whole", 3), tmp_path / "uninterrupted", whole)
    assert emitted(rows) == emitted(whole)
    assert all(emitted(whole).values()), "every kind of window emitted rows"
    open_at_first_restart = [r for r in emitted(rows)["TUMBLE"] if r[1] == "2020-04-15 08:10:00"]
    assert open_at_first_restart == [("s1", "2020-04-15 08:10:00", "2020-04-15 08:20:00", "2", "12.00", "7.00"),
                                     ("s2", "2020-04-15 08:10:00", "2020-04-15 08:20:00", "2", "3.00", "2.00")]


def test_a_parallelism_change_of_hdfs_backed_state_re_seeds_every_kind_of_window(spark, tmp_path) -> None:
    """With LISTAGG, ARRAY_AGG, JSON_OBJECTAGG and a DISTINCT aggregate: the lists and sets Spark serializes in its
    state are read back and carried value for value, in arrival order."""
    def write_in_order(directory: Path, name: str, part: list, closer: bool = False) -> None:
        """Files modified one second apart, so their rows arrive in one order in every run (a
        tie in Spark's modification time would be broken by the path)."""
        write(directory, name, part, closer)
        at = 1_700_000_000 + (name == "b.csv")
        os.utime(directory / name, (at, at))

    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    rows: dict[str, list] = {}
    write_in_order(source, "a.csv", PART_A)
    run_job(spark, job(source, 3, store="", lists=True), checkpoint, rows)
    write_in_order(source, "b.csv", PART_B, closer=True)
    second = run_job(spark, job(source, 6, store="", lists=True), checkpoint, rows)
    assert second.report is not None and second.report.verdict is Verdict.FULL
    assert "stategate.setting.parallelism.reseeded" in {f.rule for f in second.report.findings}
    assert not second.repartitioned and {partitions(checkpoint / name) for name in PIPELINES} == {6}
    assert len(list((checkpoint / RECORD_DIR / RESEEDED).iterdir())) == 1, "the old state, archived once"

    whole: dict[str, list] = {}
    for name, part in (("a.csv", PART_A), ("b.csv", PART_B)):
        write_in_order(tmp_path / "whole", name, part, closer=name == "b.csv")
    run_job(spark, job(tmp_path / "whole", 3, store="", lists=True), tmp_path / "uninterrupted", whole)
    assert emitted(rows) == emitted(whole) and all(emitted(whole).values())
    spanning = [r for r in emitted(rows)["TUMBLE"] if r[1] == "2020-04-15 08:10:00"]
    assert [r[6:] for r in spanning] == [("D,F", "[Decimal('5.00'), Decimal('7.00')]", "2", '{"D":5.00,"F":7.00}'),
                                         ("E,G", "[Decimal('1.00'), Decimal('2.00')]", "2", '{"E":1.00,"G":2.00}')], \
        "the windows open at the restart: a value from the state, then one from after it"

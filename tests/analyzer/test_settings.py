"""A job's SET statements on Spark: the mapping table, and the verdict when one of them fixes the state."""

from __future__ import annotations

import pytest

from stategate.analyzer import SQLModelError, Verdict, build, compare
from stategate.analyzer.judgement import Deployed, judge
from stategate.analyzer.layout import plan
from stategate.analyzer.signature import state_signature
from stategate.analyzer.settings import (DEFAULT_PARTITIONS, HDFS_BACKED, ROCKSDB, SHUFFLE_PARTITIONS, STATE_STORE,
                                         ignored, spark_settings, state_settings)
from tests.analyzer.seed_cases import legacy

JOB = legacy("a, SUM(b)")


def job(*settings: str) -> str:
    return "".join(f"SET '{key}' = '{value}';\n" for key, value in (s.split("=", 1) for s in settings)) + JOB


@pytest.mark.parametrize("settings, expected", [
    ((), {}),
    (("parallelism.default=64",), {SHUFFLE_PARTITIONS: "64"}),
    (("table.exec.resource.default-parallelism=16",), {SHUFFLE_PARTITIONS: "16"}),
    (("parallelism.default=64", "table.exec.resource.default-parallelism=16"), {SHUFFLE_PARTITIONS: "16"}),
    (("parallelism.default=64", "table.exec.resource.default-parallelism=-1"), {SHUFFLE_PARTITIONS: "64"}),
    (("parallelism.default=64", "spark.sql.shuffle.partitions=8"), {SHUFFLE_PARTITIONS: "8"}),
    (("state.backend.type=rocksdb",), {STATE_STORE: ROCKSDB}),
    (("state.backend=filesystem",), {STATE_STORE: HDFS_BACKED}),
    (("state.backend=rocksdb", "state.backend.type=hashmap"), {STATE_STORE: HDFS_BACKED}),
    (("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true",),
     {"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}),
])
def test_flink_settings_map_to_spark_settings(settings, expected) -> None:
    assert spark_settings(build(job(*settings))) == expected


@pytest.mark.parametrize("setting, problem", [
    ("parallelism.default=0", "a parallelism is a whole number of at least 1"),
    ("parallelism.default=many", "a parallelism is a whole number of at least 1"),
    ("state.backend.type=forst", "Spark runs the state backends filesystem, hashmap, jobmanager, rocksdb"),
])
def test_a_value_spark_cannot_take_is_refused_by_name(setting, problem) -> None:
    with pytest.raises(SQLModelError, match=f"SET '{setting.split('=')[0]}'.*{problem}"):
        spark_settings(build(job(setting)))


def test_settings_without_a_spark_meaning_are_named() -> None:
    model = build(job("pipeline.name=bids", "table.exec.state.ttl=1 h", "stategate.state.slots=4",
                      "parallelism.default=2", "spark.sql.shuffle.partitions=2"))
    assert ignored(model) == ["pipeline.name", "table.exec.state.ttl"]
    finding = next(f for f in compare(JOB, job("pipeline.name=bids")).findings if f.rule.endswith("setting.ignored"))
    assert finding.effect is Verdict.FULL and "pipeline.name" in finding.message


@pytest.mark.parametrize("before, after, rule", [
    ((), ("parallelism.default=8",), "stategate.setting.parallelism"),
    (("parallelism.default=8",), ("table.exec.resource.default-parallelism=16",), "stategate.setting.parallelism"),
    (("spark.sql.shuffle.partitions=8",), ("parallelism.default=4",), "stategate.setting.parallelism"),
    ((), ("state.backend.type=rocksdb",), "stategate.setting.state-backend"),
])
def test_a_changed_parallelism_or_state_backend_needs_new_state(before, after, rule) -> None:
    report = compare(job(*before), job(*after))
    assert report.verdict is Verdict.INCOMPATIBLE
    (finding,) = [f for f in report.findings if f.rule == rule]
    assert "takes effect only with new state" in finding.message


@pytest.mark.parametrize("before, after", [
    (("state.backend.type=rocksdb",), ("state.backend.type=rocksdb", "parallelism.default=8")),
    (("state.backend=rocksdb", "parallelism.default=8"), ("state.backend.type=rocksdb", "spark.sql.shuffle.partitions=2")),
    (("spark.sql.streaming.stateStore.providerClass=" + ROCKSDB, "table.exec.resource.default-parallelism=3"),
     ("state.backend.type=rocksdb", "parallelism.default=6")),
])
def test_a_changed_parallelism_of_rocksdb_state_restarts_on_its_repartitioned_state(before, after) -> None:
    report = compare(job(*before), job(*after))
    assert report.verdict is Verdict.FULL
    (finding,) = [f for f in report.findings if f.rule.startswith("stategate.setting.parallelism")]
    assert finding.rule == "stategate.setting.parallelism.repartitioned"
    new = state_settings(build(job(*after)))[SHUFFLE_PARTITIONS]
    assert f"repartitions the RocksDB state to {new} partitions" in finding.message


def test_a_changed_parallelism_of_other_state_says_what_would_carry_it() -> None:
    report = compare(job(), job("parallelism.default=8"))
    (finding,) = [f for f in report.findings if f.rule == "stategate.setting.parallelism"]
    assert finding.effect is Verdict.INCOMPATIBLE
    assert "Spark repartitions RocksDB state only" in finding.message


@pytest.mark.parametrize("before, after", [
    ((), (f"parallelism.default={DEFAULT_PARTITIONS}",)),
    (("parallelism.default=8",), ("spark.sql.shuffle.partitions=8",)),
    (("state.backend=filesystem",), ("state.backend.type=hashmap",)),
])
def test_the_same_state_settings_spelled_another_way_keep_the_state(before, after) -> None:
    assert state_settings(build(job(*before))) == state_settings(build(job(*after)))
    assert compare(job(*before), job(*after)).verdict is Verdict.FULL


FILES_JOB = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,\n"
             "  WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', "
             "'path' = '/bids', 'format' = 'csv');\n"
             "SELECT item, window_start, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
             "INTERVAL '10' MINUTES))\nGROUP BY item, window_start, window_end;")
#: Nexmark q5's shape: the most bids per window, over the windows of another aggregation.
PER_WINDOW = FILES_JOB[:FILES_JOB.index("SELECT")] + (
    "CREATE VIEW M AS SELECT item, window_start, window_end, COUNT(*) AS n\n"
    "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))\n"
    "GROUP BY item, window_start, window_end;\n"
    "SELECT window_start, MAX(n) FROM M GROUP BY window_start, window_end;")
#: Two aggregations of the bids joined on their windows: each branch's state is carried.
WINDOW_JOIN = FILES_JOB[:FILES_JOB.index("SELECT")] + (
    "SELECT C.item, C.ws, C.n, T.total\n"
    "FROM (SELECT item, COUNT(*) AS n, window_start AS ws, window_end AS we\n"
    "      FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end) C\n"
    "JOIN (SELECT item, SUM(price) AS total, window_start AS ws, window_end AS we\n"
    "      FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY item, window_start, window_end) T\n"
    "ON C.item = T.item AND C.ws = T.ws AND C.we = T.we;")
#: Nexmark q7's shape: the bids joined with the highest price of the window around them.
INTERVAL_JOIN = FILES_JOB[:FILES_JOB.index("SELECT")] + (
    "SELECT B.item, B.price FROM Bid B\n"
    "JOIN (SELECT MAX(price) AS top, window_end AS t FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), "
    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end) M\n"
    "ON B.price = M.top WHERE B.bidtime BETWEEN M.t - INTERVAL '10' SECOND AND M.t;")


@pytest.mark.parametrize("script", [FILES_JOB, WINDOW_JOIN, PER_WINDOW], ids=["window", "window-join", "per-window"])
def test_a_changed_parallelism_of_other_state_re_seeds_where_every_pipeline_can(script: str) -> None:
    """The HDFS-backed store is never repartitioned by Spark; a job whose state a re-seed carries
    goes on in new state at the new number of partitions, every aggregate from its state (FULL)."""
    old, new = build(script), build("SET 'parallelism.default' = '8';\n" + script)
    judged = judge(new, Deployed(old, state_signature(old, plan(old))))
    assert judged.verdict is Verdict.FULL and judged.layout is not None
    assert judged.layout.reseeded == {"select#1"}
    (finding,) = [f for f in judged.report.findings if f.rule.startswith("stategate.setting.parallelism")]
    assert finding.rule == "stategate.setting.parallelism.reseeded" and "new state of 8 partitions" in finding.message
    assert "stategate.layout.reseed" not in {f.rule for f in judged.report.findings}, "the aggregates fit"


@pytest.mark.parametrize("script, why", [
    (INTERVAL_JOIN, "an interval join keeps the stream's rows beside its windows"),
    (PER_WINDOW.replace("'filesystem', 'path' = '/bids', 'format' = 'csv'", "'kafka', 'topic' = 'bids'"),
     "only a file source is re-read from where the old version stopped"),
], ids=["interval-join", "kafka"])
def test_a_changed_parallelism_that_a_re_seed_cannot_carry_says_whose_state(script: str, why: str) -> None:
    report = compare(script, "SET 'parallelism.default' = '8';\n" + script)
    assert report.verdict is Verdict.INCOMPATIBLE
    (finding,) = [f for f in report.findings if f.rule == "stategate.setting.parallelism"]
    assert f"a re-seed cannot carry the state of select#1 ({why})" in finding.message

"""The checkpoint guard refuses restarts the verdict forbids, and never touches the state it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stategate.analyzer import SQLModelError, Verdict
from stategate.analyzer.layout import LAYOUT, LAYOUT_V1
from stategate.spark_jobs.checkpoint import RECORD_DIR
from stategate.spark_jobs.guard import CheckpointRefused
from tests.spark_jobs.helpers import bid_ddl, collect, seed_bids


def query(select: str, group: str, size: str = "10") -> str:
    return (f"SELECT {select}\nFROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '{size}' MINUTES))\n"
            f"GROUP BY {group};")


V1 = query("window_start, item, supplier_id, SUM(price) AS s", "item, supplier_id, window_start, window_end")


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def deployed(spark, tmp_path) -> tuple[Path, Path]:
    source = seed_bids(tmp_path)
    checkpoint = tmp_path / "checkpoint"
    collect(spark, bid_ddl(source) + V1, checkpoint)
    return source, checkpoint


def test_the_record_holds_the_sql_and_the_state_signature(deployed) -> None:
    _, checkpoint = deployed
    assert "SUM(price) AS s" in (checkpoint / RECORD_DIR / "job.sql").read_text()
    signature = json.loads((checkpoint / RECORD_DIR / "signature.json").read_text())
    stage = signature["pipelines"]["select#1"]["stages"][0]
    assert stage["aggregates"] == ["SUM(Bid.price)"]
    assert stage["window"] == "TUMBLE(Bid.bidtime, size=10min)"
    assert signature["layout"] == LAYOUT
    assert stage["slots"]["plain"]["assigned"] == {"SUM(Bid.price)": 0}


def with_cheap_view(ddl: str) -> str:
    return ddl + "CREATE TEMPORARY VIEW Cheap AS SELECT * FROM Bid WHERE price < 5;\n"


def time_attribute_moved(ddl: str) -> str:
    """Bid gains a second timestamp, and the watermark (the time attribute) moves to it."""
    return ddl.replace("supplier_id STRING", "supplier_id STRING, paid_at TIMESTAMP(3)") \
        .replace("WATERMARK FOR bidtime AS bidtime", "WATERMARK FOR paid_at AS paid_at")


def with_proctime(ddl: str) -> str:
    return ddl.replace("supplier_id STRING", "supplier_id STRING, pt AS PROCTIME()")


@pytest.mark.parametrize("edit_ddl, v2, verdict", [
    pytest.param(str, V1.replace("'10' MINUTES", "'5' MINUTES"), "INCOMPATIBLE", id="window-size"),
    # Two STRING keys swapped: Spark's own state-schema check would pass and read the wrong state.
    pytest.param(str, query("window_start, item, supplier_id, SUM(price) AS s",
                            "supplier_id, item, window_start, window_end"), "INCOMPATIBLE", id="same-typed-keys-swapped"),
    pytest.param(time_attribute_moved, V1.replace("DESCRIPTOR(bidtime)", "DESCRIPTOR(paid_at)"), "INCOMPATIBLE",
                 id="time-attribute"),
    pytest.param(with_proctime, V1.replace("DESCRIPTOR(bidtime)", "DESCRIPTOR(pt)"), "INCOMPATIBLE",
                 id="rowtime-to-proctime"),
    pytest.param(with_cheap_view, V1.replace("TABLE Bid,", "TABLE Cheap,"), "UNKNOWN", id="source-view"),
])
def test_refuses_incompatible_and_unknown_restarts_leaving_state_untouched(
        spark, deployed, edit_ddl, v2: str, verdict: str) -> None:
    source, checkpoint = deployed
    script = edit_ddl(bid_ddl(source)) + v2
    before = snapshot(checkpoint)
    with pytest.raises(CheckpointRefused, match=f"verdict {verdict}"):
        collect(spark, script, checkpoint)
    if verdict == "INCOMPATIBLE":
        with pytest.raises(CheckpointRefused, match=f"verdict {verdict}"):
            collect(spark, script, checkpoint, accept=Verdict.UNKNOWN)
    assert snapshot(checkpoint) == before


def test_a_human_may_accept_an_unknown_verdict(spark, deployed) -> None:
    source, checkpoint = deployed
    v2 = with_cheap_view(bid_ddl(source)) + V1.replace("TABLE Bid,", "TABLE Cheap,")
    collect(spark, v2, checkpoint, accept=Verdict.UNKNOWN)
    assert "Cheap" in (checkpoint / RECORD_DIR / "job.sql").read_text()


def test_a_checkpoint_of_the_unpivoted_layout_is_refused_by_name(spark, deployed) -> None:
    """State written by layout v1 (one row per aggregate) cannot be read as slots: refused, kept."""
    source, checkpoint = deployed
    (checkpoint / RECORD_DIR / "signature.json").write_text(json.dumps({"layout": LAYOUT_V1, "pipelines": {}}))
    (checkpoint / RECORD_DIR / ".signature.json.crc").unlink()  # Hadoop's checksum of the v2 record
    before = snapshot(checkpoint)
    with pytest.raises(CheckpointRefused, match=f"stategate.layout.old: the state was written with layout "
                                                f"{LAYOUT_V1}.*archive the checkpoint"):
        collect(spark, bid_ddl(source) + V1, checkpoint)
    assert snapshot(checkpoint) == before


@pytest.mark.parametrize("recorded, refusal", [
    ("SUM:m1p10", r"state keeps 1 decimal places; write CAST\(\.\.\. AS DECIMAL\(p, 1\)\)"),
    ("SUM:m2p8", r"state takes 8 digits; write CAST\(\.\.\. AS DECIMAL\(8, 2\)\)"),
])
def test_a_slot_that_would_round_or_overflow_its_argument_stops_the_job_before_it_starts(
        spark, deployed, recorded: str, refusal: str) -> None:
    """A slot takes exact values at the scale and in the digits its shape records (the declared
    type's). Should Spark type the argument with more decimal places or digits than that (here: a
    record saying one place, or 8 digits, for the SUM of a DECIMAL(10, 2) price), values would be
    rounded or overflow: the job stops at compile time instead."""
    source, checkpoint = deployed
    record = checkpoint / RECORD_DIR / "signature.json"
    assert '"SUM:m2p10"' in record.read_text()
    record.write_text(record.read_text().replace('"SUM:m2p10"', f'"{recorded}"'))
    (checkpoint / RECORD_DIR / ".signature.json.crc").unlink()
    before = snapshot(checkpoint)
    with pytest.raises(SQLModelError, match=r"SUM\(price\): its argument is decimal\(10,2\) on Spark, but its "
                                            + refusal):
        collect(spark, bid_ddl(source) + V1, checkpoint)
    assert snapshot(checkpoint) == before


def test_a_restart_that_does_not_fit_the_slots_and_cannot_re_seed_is_refused(spark, tmp_path) -> None:
    """A cascade recorded before its upstream window's state kept every field (that state holds only
    those the downstream read, which a re-seed cannot place) keeps its layout: a change that does
    not fit it is refused before anything changes, and says why."""
    source = seed_bids(tmp_path)
    checkpoint = tmp_path / "checkpoint"
    cascade = ("CREATE VIEW M AS SELECT item, window_time AS t, SUM(price) AS s\n"
               "FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))\n"
               "GROUP BY item, window_start, window_end, window_time;\n"
               "SELECT window_start, item, SUM(s) AS s\n"
               "FROM TABLE(TUMBLE(TABLE M, DESCRIPTOR(t), INTERVAL '10' MINUTES))\n"
               "GROUP BY item, window_start, window_end;")
    collect(spark, bid_ddl(source) + cascade, checkpoint)
    record = checkpoint / RECORD_DIR / "signature.json"
    signature = json.loads(record.read_text())
    for stage in signature["pipelines"]["select#1"]["stages"]:
        assert stage["slots"].pop("whole") is True
    record.write_text(json.dumps(signature))  # as an older stategate recorded it
    (checkpoint / RECORD_DIR / ".signature.json.crc").unlink()
    before = snapshot(checkpoint)
    wider = cascade.replace("SUM(s) AS s", "SUM(s) AS s, MAX(s) AS m")
    with pytest.raises(CheckpointRefused, match="stategate.layout.no-room.*only 0 of 1 plain slots are free.*"
                                                "cannot be re-seeded: its upstream windows' state keeps only"):
        collect(spark, bid_ddl(source) + wider, checkpoint)
    assert snapshot(checkpoint) == before


def test_fresh_on_a_non_empty_checkpoint_is_refused(spark, deployed) -> None:
    source, checkpoint = deployed
    before = snapshot(checkpoint)
    with pytest.raises(CheckpointRefused, match="never deletes state"):
        collect(spark, bid_ddl(source) + V1, checkpoint, fresh=True)
    assert snapshot(checkpoint) == before


def test_a_checkpoint_without_a_record_is_refused(spark, deployed) -> None:
    source, checkpoint = deployed
    for file in (checkpoint / RECORD_DIR).iterdir():
        file.unlink()
    (checkpoint / RECORD_DIR).rmdir()
    with pytest.raises(CheckpointRefused, match="no stategate record"):
        collect(spark, bid_ddl(source) + V1, checkpoint)


def test_fresh_start_on_an_empty_checkpoint(spark, tmp_path) -> None:
    source = seed_bids(tmp_path)
    rows = collect(spark, bid_ddl(source) + V1, tmp_path / "new", fresh=True)
    assert len(rows) == 6  # one row per bid: every (item, supplier) pair is its own group


def test_a_checkpoint_uri_is_guarded_through_sparks_filesystem(spark, tmp_path) -> None:
    """Checkpoints may be URIs (hdfs://, s3a://): the record goes through Spark's Hadoop filesystem."""
    source = seed_bids(tmp_path)
    uri = f"file://{tmp_path / 'uri-checkpoint'}"
    collect(spark, bid_ddl(source) + V1, uri)
    assert "SUM(price) AS s" in (tmp_path / "uri-checkpoint" / RECORD_DIR / "job.sql").read_text()
    with pytest.raises(CheckpointRefused, match="verdict INCOMPATIBLE"):
        collect(spark, bid_ddl(source) + V1.replace("'10' MINUTES", "'5' MINUTES"), uri)


def test_a_record_without_spark_state_is_no_state(spark, tmp_path) -> None:
    """A job killed after recording its SQL but before Spark wrote a file: nothing to protect."""
    source = seed_bids(tmp_path)
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / RECORD_DIR).mkdir(parents=True)
    (checkpoint / RECORD_DIR / "job.sql").write_text(bid_ddl(source) + V1.replace("'10' MINUTES", "'5' MINUTES"))
    assert len(collect(spark, bid_ddl(source) + V1, checkpoint, fresh=True)) == 6
    assert "'10' MINUTES" in (checkpoint / RECORD_DIR / "job.sql").read_text()

"""The replay span a clear-state redeploy needs, per pipeline, in every rendering of the report."""

from __future__ import annotations

import json

import pytest

from stategate.analyzer import SQLModelError, build, compare
from stategate.analyzer.replay import DEFAULT_SESSION_CAP_MS, replays

DDL = ("CREATE TABLE Bid (bidtime TIMESTAMP(3), price DOUBLE, item STRING, pt AS PROCTIME(), "
       "WATERMARK FOR bidtime AS bidtime - INTERVAL '{delay}' SECOND) "
       "WITH ('connector' = 'filesystem', 'path' = 'bids', 'format' = 'csv');\n")
QUERY = "INSERT INTO S SELECT item, SUM(price) AS total FROM TABLE({window}) GROUP BY item, window_start, window_end;"


def span(window: str, delay: int = 0, settings: str = "") -> float | None:
    model = build(settings + DDL.format(delay=delay) + QUERY.format(window=window))
    (replay,) = replays(None, model)
    return replay.to_dict()["span_seconds"]


@pytest.mark.parametrize("window, seconds", [
    ("TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)", 600),
    ("HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES, INTERVAL '15' MINUTES)", 900),
    ("CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '1' MINUTES, INTERVAL '1' HOUR)", 3600),
    ("SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)", DEFAULT_SESSION_CAP_MS / 1000),
])
def test_the_span_is_the_longest_open_window_plus_the_watermark_delay(window: str, seconds: float) -> None:
    assert span(window) == seconds
    assert span(window, delay=30) == seconds + 30


def test_allowed_lateness_and_the_session_cap_are_the_jobs_settings() -> None:
    session = "SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)"
    assert span(session, settings="SET 'stategate.replay.session-cap' = '2 h';\n") == 7200
    tumble = "TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)"
    assert span(tumble, settings="SET 'table.exec.emit.allow-lateness' = '1 min';\n") == 660
    with pytest.raises(SQLModelError, match="stategate.replay.session-cap"):
        span(session, settings="SET 'stategate.replay.session-cap' = 'a while';\n")


def test_a_changed_session_cap_is_state_neutral() -> None:
    session = DDL.format(delay=0) + QUERY.format(window="SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)")
    report = compare(session, "SET 'stategate.replay.session-cap' = '3 h';\n" + session)
    assert report.verdict.value == "FULL", report.to_text()


def test_processing_time_windows_have_no_replay_and_say_why() -> None:
    assert span("TUMBLE(TABLE Bid, DESCRIPTOR(pt), INTERVAL '10' MINUTES)") is None
    model = build(DDL.format(delay=0) + QUERY.format(window="TUMBLE(TABLE Bid, DESCRIPTOR(pt), INTERVAL '10' MINUTES)"))
    assert "windows open at the cutover start empty" in replays(None, model)[0].note


def test_cascaded_windows_add_up_along_the_chain() -> None:
    cascade = (DDL.format(delay=5) + "CREATE TEMPORARY VIEW w1 AS SELECT item, window_start AS ws, window_end AS we, "
               "window_time AS rt, SUM(price) AS p FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) "
               "GROUP BY item, window_start, window_end, window_time;\n"
               "INSERT INTO S SELECT item, SUM(p) FROM TABLE(TUMBLE(TABLE w1, DESCRIPTOR(rt), INTERVAL '1' HOUR)) "
               "GROUP BY item, window_start, window_end;")
    assert replays(None, build(cascade))[0].span_ms == (300 + 3600 + 5) * 1000


def test_the_report_carries_the_replay_and_the_seam_in_text_json_and_markdown() -> None:
    ddl = DDL.format(delay=10)
    old = ddl + QUERY.format(window="TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)")
    same_shape = old.replace("item, SUM(price)", "UPPER(item), SUM(price)").replace("GROUP BY item", "GROUP BY UPPER(item)")
    resized = old.replace("'10' MINUTES", "'15' MINUTES")
    report = compare(old, same_shape)
    assert report.verdict.value == "INCOMPATIBLE"
    (entry,) = json.loads(report.to_json())["replay"]
    assert entry["sink"] == "S" and entry["span_seconds"] == 610 and "TUMBLE 10min" in entry["note"]
    assert "one row per key and window" in entry["seam"]
    assert "S: replays 610s (TUMBLE 10min; watermark delay 10s)" in report.to_text()
    assert "If the state is cleared" in report.to_markdown()
    moved = json.loads(compare(old, resized).to_json())["replay"][0]
    assert moved["span_seconds"] == 910 and "the window shape changed" in moved["seam"]


def test_a_sink_or_source_elsewhere_is_not_taken_over() -> None:
    """The seam holds only where the old version wrote: a sink whose location changed is filled by a
    full replay; a source read elsewhere is read from its startup mode and the report says so."""
    sink = "CREATE TABLE S (item STRING, total DOUBLE) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n"
    old = DDL.format(delay=0) + sink.format("out") + QUERY.format(
        window="TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)")
    changed = old.replace("GROUP BY item", "GROUP BY item, price")
    assert "one row per key and window" in compare(old, changed).replay[0].seam
    assert "one row per key and window" in compare(old, changed.replace("'out'", "'out/'")).replay[0].seam
    moved = compare(old, changed.replace("'out'", "'out_v2'")).replay[0]
    assert moved.span_ms is None and "a full replay writes every window" in moved.seam
    elsewhere = compare(old, changed.replace("'bids'", "'bids_v2'")).replay[0]
    assert elsewhere.span_ms == 600_000 and "not what the old version read" in elsewhere.seam
    assert "startup mode" in compare(old, changed.replace("'filesystem', 'path' = 'bids'",
                                                          "'filesystem', 'path' = 'other'")).replay[0].seam

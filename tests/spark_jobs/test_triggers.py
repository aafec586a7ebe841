"""A job's trigger is read once, as Spark reads it: what the CLI, a graceful stop and a fleet's job
file accept is what ``Trigger.ProcessingTime`` accepts, and the interval a stop waits out is the
one Spark runs micro-batches at."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stategate.spark_jobs.triggers import AVAILABLE_NOW, interval_s, options

#: Intervals as a job file might write them, Spark's grammar and beside it.
INTERVALS = ("30 seconds", "1 minute 30 seconds", "interval 5 seconds", "500 milliseconds", "1.5 seconds",
             "10 Seconds", "2 HOURS", "1 day", "1 week", "250 microseconds", "1 hour 1 minute 1 second",
             "0 seconds", "10s", "500ms", "10", "1 month", "1 year", "seconds", "abc", "", "10 seconds later",
             "-5 seconds", "5 fortnights")


def spark_interval_s(spark, interval: str) -> float | None:
    """The interval Spark itself reads from ``interval`` (seconds), None where it refuses it."""
    try:
        return spark._jvm.org.apache.spark.sql.streaming.Trigger.ProcessingTime(interval).intervalMs() / 1000
    except Exception:  # noqa: BLE001 - Py4J wraps Spark's parse errors and refusals alike
        return None


@pytest.mark.parametrize("interval", INTERVALS)
def test_an_interval_is_accepted_exactly_where_spark_accepts_it(spark, interval: str) -> None:
    expected = spark_interval_s(spark, interval)
    if expected is None:
        with pytest.raises(ValueError, match="unknown trigger 'processing-time=.*' .*'1 minute 30 seconds'"):
            interval_s(f"processing-time={interval}")
    else:  # Spark counts whole milliseconds
        assert int(interval_s(f"processing-time={interval}") * 1000) == pytest.approx(expected * 1000, abs=1)
        assert options(f"processing-time={interval}") == {"processingTime": interval}


def test_available_now_has_no_interval_and_anything_else_is_refused() -> None:
    assert interval_s(AVAILABLE_NOW) is None and options(AVAILABLE_NOW) == {"availableNow": True}
    for trigger in ("once", "continuous=1 second", "processing-time", "processingTime=30 seconds", "30 seconds"):
        with pytest.raises(ValueError, match=f"unknown trigger '{trigger}'"):
            options(trigger)


def test_the_job_refuses_a_trigger_spark_would_refuse_before_it_starts(tmp_path) -> None:
    checkpoint = tmp_path / "checkpoint"
    refused = subprocess.run([sys.executable, "-m", "stategate.spark_jobs", "run", "--sql", str(tmp_path / "job.sql"),
                              "--checkpoint", str(checkpoint), "--trigger", "processing-time=30s"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "argument --trigger: unknown trigger 'processing-time=30s'" in refused.stderr
    assert not checkpoint.exists()

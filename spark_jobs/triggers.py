"""The two triggers a job runs under, read once for the CLI, the driver's supervisor and a fleet's
job files: ``available-now`` (process what is there, then stop) and ``processing-time=<interval>``
(always on: a micro-batch every interval).

The interval is read by Spark's own grammar (``Trigger.ProcessingTime``): an optional ``interval``,
then one or more ``<number> <unit>`` with the units week, day, hour, minute, second, millisecond
and microsecond, singular or plural, in any case. Spark refuses ``10s``, ``500ms`` and months, so
this does too, and a fleet's job file with one is refused when it is loaded rather than at
spark-submit. No PySpark here: Airflow reads job files without it.
"""

from __future__ import annotations

import re

AVAILABLE_NOW = "available-now"
PROCESSING_TIME = "processing-time="
#: Seconds per unit of an interval, as Spark counts them (a day is 24 hours, a week 7 days).
_UNIT_S = {"week": 604800.0, "day": 86400.0, "hour": 3600.0, "minute": 60.0, "second": 1.0,
           "millisecond": 0.001, "microsecond": 0.000001}
_PART = rf"(\d+(?:\.\d+)?)\s*({'|'.join(_UNIT_S)})s?"
_INTERVAL = re.compile(rf"(?:interval\s+)?{_PART}(?:\s+{_PART})*", re.IGNORECASE)
_PARTS = re.compile(_PART, re.IGNORECASE)


def interval_s(trigger: str) -> float | None:
    """The seconds between a ``processing-time`` trigger's micro-batches; None for
    ``available-now``, which runs its next micro-batch at once.

    :raises ValueError: naming the trigger, when it is neither
    """
    interval = _interval(trigger)
    if interval is None:
        return None
    return sum(float(number) * _UNIT_S[unit.lower()] for number, unit in _PARTS.findall(interval))


def options(trigger: str) -> dict[str, bool | str]:
    """``trigger`` as the keyword of ``DataStreamWriter.trigger``.

    :raises ValueError: naming the trigger, when it is neither kind
    """
    interval = _interval(trigger)
    return {"availableNow": True} if interval is None else {"processingTime": interval}


def _interval(trigger: str) -> str | None:
    """A ``processing-time`` trigger's interval as written; None for ``available-now``."""
    if trigger == AVAILABLE_NOW:
        return None
    interval = trigger.removeprefix(PROCESSING_TIME).strip()
    if not trigger.startswith(PROCESSING_TIME) or not _INTERVAL.fullmatch(interval):
        raise ValueError(f"unknown trigger {trigger!r}: use {AVAILABLE_NOW} or {PROCESSING_TIME}<interval> "
                         "with Spark's units, like '30 seconds' or '1 minute 30 seconds'")
    return interval

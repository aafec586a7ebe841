"""Named points where a crash test can hold the job, so that its kill -9 lands at an exact moment.

A kill at a random time rarely hits the few milliseconds between staging a sink file and moving it
into place, yet that is where an exactly-once sink is most likely to break. With::

    STATEGATE_PAUSE_AT=sink.staged:2  STATEGATE_PAUSE_FILE=/tmp/paused

the job announces the second time it reaches ``sink.staged`` (it writes ``sink.staged 2`` to the
pause file) and then sleeps until it is killed. Without those variables :func:`reach` does nothing.
The points are listed in :data:`POINTS`.
"""

from __future__ import annotations

import os
import time
from collections import Counter

POINTS = {
    "sink.staged": "a batch's file is written to the sink's staging area, not yet moved into place",
    "sink.placed": "a batch's file is in place; Spark has not yet committed the batch",
    "reseed.moved": "a re-seed moved the old query into its archive; its state is not carried yet",
}

_reached: Counter[str] = Counter()


def reach(point: str) -> None:
    target = os.environ.get("STATEGATE_PAUSE_AT")
    if not target:
        return
    name, _, nth = target.partition(":")
    if name not in POINTS:
        raise ValueError(f"STATEGATE_PAUSE_AT={target}: unknown point (use one of {', '.join(POINTS)})")
    if point != name:
        return
    _reached[point] += 1
    if _reached[point] != int(nth or 1):
        return
    with open(os.environ["STATEGATE_PAUSE_FILE"], "w", encoding="utf-8") as announce:
        announce.write(f"{point} {_reached[point]}\n")
    while True:  # held here until the test kills the process group
        time.sleep(60)

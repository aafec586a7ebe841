"""Window slicing (seed 004): each record updates one slice; windows are combined from slices.

A HOP of 60 min every 1 min written as Spark's ``window(ts, '60 minutes', '1 minute')`` updates 60
windows per record. Sliced, a record updates one 1-minute slice (stage 1), and the 60-fold fan-out
happens once per *slice* when it closes (stage 2): the per-record cost no longer grows with
size / slide. Both stages are Spark's native streaming aggregations, chained on ``window_time``.

One small class per window kind, as in Flink's slice assigners:

* :class:`Tumble` — the slice is the window; no stage 2.
* :class:`Hop` — slices of ``gcd(size, slide)``; stage 2 groups slices into sliding windows.
* :class:`Cumulate` — a :class:`Hop` sliding by its step whose windows keep only the slices at or
  after the cumulative window's start.
* :class:`Session` — no fixed slices: Spark's session window merges per key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from math import gcd

from pyspark.sql import Column
from pyspark.sql import functions as F

from analyzer.model import Window


def _duration(ms: int) -> str:
    return f"{ms} milliseconds"


class WindowSlicer(ABC):
    """Maps records to slices (stage 1) and slices to windows (stage 2)."""

    @abstractmethod
    def slice(self, ts: Column) -> Column:
        """The stage-1 grouping column (a window struct) of a record's time attribute."""

    def windows(self, slice_col: Column) -> Column | None:
        """The stage-2 grouping column for a closed slice; None when the slice is the window."""
        return None

    def contains(self, slice_col: Column, window_col: Column) -> Column | None:
        """Extra condition for a slice to count in a stage-2 window; None when all do."""
        return None

    def bounds(self, window_col: Column) -> tuple[Column, Column]:
        """``(window_start, window_end)`` of an emitted window."""
        return window_col["start"], window_col["end"]


@dataclass(frozen=True)
class Tumble(WindowSlicer):
    size_ms: int
    offset_ms: int = 0

    def slice(self, ts: Column) -> Column:
        return F.window(ts, _duration(self.size_ms), _duration(self.size_ms),
                        _duration(self.offset_ms % self.size_ms))


@dataclass(frozen=True)
class Hop(WindowSlicer):
    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    @property
    def slice_ms(self) -> int:
        return gcd(self.size_ms, self.slide_ms)

    def slice(self, ts: Column) -> Column:
        return F.window(ts, _duration(self.slice_ms), _duration(self.slice_ms),
                        _duration(self.offset_ms % self.slice_ms))

    def windows(self, slice_col: Column) -> Column:
        # Slice and window boundaries share the gcd grid, so a window holds a whole slice iff it
        # holds the slice's last instant (window_time).
        return F.window(F.window_time(slice_col), _duration(self.size_ms), _duration(self.slide_ms),
                        _duration(self.offset_ms % self.slide_ms))


@dataclass(frozen=True)
class Cumulate(Hop):
    """A cumulative window [start, end) is the tail of the size-long hop window ending at ``end``:
    slices of one step, grouped as the hop windows sliding by a step (Spark evicts each at its own
    end), keeping only the slices at or after the cumulative window's start."""

    def contains(self, slice_col: Column, window_col: Column) -> Column:
        return slice_col["start"] >= self._start(window_col["end"])

    def bounds(self, window_col: Column) -> tuple[Column, Column]:
        return self._start(window_col["end"]), window_col["end"]

    def _start(self, end: Column) -> Column:
        size_us, offset_us = self.size_ms * 1000, (self.offset_ms % self.size_ms) * 1000
        last = F.unix_micros(end) - 1 - offset_us
        return F.timestamp_micros(F.floor(last / size_us) * size_us + offset_us)


@dataclass(frozen=True)
class Session(WindowSlicer):
    gap_ms: int

    def slice(self, ts: Column) -> Column:
        return F.session_window(ts, _duration(self.gap_ms))


def slicer_for(window: Window) -> WindowSlicer:
    offset = window.offset_ms or 0
    if window.kind == "TUMBLE":
        return Tumble(window.size_ms, offset)
    if window.kind == "HOP":
        return Hop(window.size_ms, window.slide_ms, offset)
    if window.kind == "CUMULATE":
        return Cumulate(window.size_ms, window.slide_ms, offset)
    return Session(window.gap_ms)

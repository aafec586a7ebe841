"""Window slicing (seed 004): each record updates one slice; windows are combined from slices.

A HOP of 60 min every 1 min written as Spark's ``window(ts, '60 minutes', '1 minute')`` updates 60
windows per record and keeps a state row per open window. Sliced, a record updates one slice of
``gcd(size, slide)`` (stage 1, Spark's native streaming aggregation); a window is assembled from the
retained slices once the watermark passes its end (stage 2, :mod:`spark_jobs.assembly`). The
per-record cost no longer depends on size / slide, and no state row exists per window.

One small class per window kind, as in Flink's slice assigners; each checks its own arguments and
answers, as Spark columns over microseconds since the epoch:

* which slice a record belongs to (:meth:`WindowSlicer.slice`);
* for kinds whose slice is not the window, the last window end a slice still counts in
  (:meth:`SharedSlicer.last_end`), the grid of window ends (:attr:`SharedSlicer.step_us`) and a
  window's start from its end (:meth:`SharedSlicer.start_of`).

* :class:`Tumble` — the slice is the window.
* :class:`Hop` — slices of ``gcd(size, slide)``; a window is the ``size / slice`` slices before its end.
* :class:`Cumulate` — slices of one step; a window is its period's slices up to its end.
* :class:`Session` — no fixed slices: Spark's session window merges per key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from math import gcd

from pyspark.sql import Column
from pyspark.sql import functions as F

from analyzer.errors import SQLModelError
from analyzer.model import Window


def _duration(ms: int) -> str:
    return f"{ms} milliseconds"


class WindowSlicer(ABC):
    """Maps records to slices."""

    @abstractmethod
    def slice(self, ts: Column) -> Column:
        """The stage-1 grouping column (a window struct) of a record's time attribute."""

    def bounds(self, window_col: Column) -> tuple[Column, Column]:
        """``(window_start, window_end)`` of an emitted window."""
        return window_col["start"], window_col["end"]


class SharedSlicer(WindowSlicer):
    """A kind whose windows share slices: assembled per batch from the retained slices."""

    slice_ms: int
    step_ms: int  # distance between two window ends
    offset_ms: int

    def slice(self, ts: Column) -> Column:
        return F.window(ts, _duration(self.slice_ms), _duration(self.slice_ms),
                        _duration(self.offset_ms % self.slice_ms))

    @property
    def step_us(self) -> int:
        return self.step_ms * 1000

    def first_end(self, slice_end_us: Column) -> Column:
        """The first window end at or after a slice's end."""
        return self._grid_ceil(slice_end_us)

    @abstractmethod
    def last_end(self, slice_start_us: Column) -> Column:
        """The last window end whose window still holds the slice starting here."""

    @abstractmethod
    def start_of(self, end_us: Column) -> Column:
        """A window's start, from its end."""

    @property
    @abstractmethod
    def end_offset_ms(self) -> int:
        """Where window ends lie on the grid of ``step_ms``."""

    def _grid_ceil(self, us: Column) -> Column:
        offset = (self.end_offset_ms % self.step_ms) * 1000
        return F.ceil((us - offset) / self.step_us) * self.step_us + offset

    def grid_floor(self, us: Column) -> Column:
        offset = (self.end_offset_ms % self.step_ms) * 1000
        return F.floor((us - offset) / self.step_us) * self.step_us + offset


def _positive(kind: str, **values: int | None) -> None:
    for name, value in values.items():
        if value is None or value <= 0:
            raise SQLModelError(f"{kind} window: {name} must be a positive interval, not {value}")


@dataclass(frozen=True)
class Tumble(WindowSlicer):
    size_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("TUMBLE", size=self.size_ms)

    def slice(self, ts: Column) -> Column:
        return F.window(ts, _duration(self.size_ms), _duration(self.size_ms),
                        _duration(self.offset_ms % self.size_ms))


@dataclass(frozen=True)
class Hop(SharedSlicer):
    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("HOP", size=self.size_ms, slide=self.slide_ms)

    @property
    def slice_ms(self) -> int:  # type: ignore[override]
        return gcd(self.size_ms, self.slide_ms)

    @property
    def step_ms(self) -> int:  # type: ignore[override]
        return self.slide_ms

    @property
    def end_offset_ms(self) -> int:
        # Windows start on the slide grid (as Flink's and Spark's do); ends are ``size`` later.
        return self.offset_ms + self.size_ms

    def last_end(self, slice_start_us: Column) -> Column:
        return self.grid_floor(slice_start_us + self.size_ms * 1000)

    def start_of(self, end_us: Column) -> Column:
        return end_us - self.size_ms * 1000


@dataclass(frozen=True)
class Cumulate(SharedSlicer):
    """A cumulative window [start, end) holds the slices of its period (``size`` long) up to ``end``."""

    size_ms: int
    step_ms: int  # type: ignore[misc]
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _positive("CUMULATE", size=self.size_ms, step=self.step_ms)
        if self.size_ms % self.step_ms:
            raise SQLModelError(f"CUMULATE window: size {self.size_ms} ms is not a multiple of the step "
                                f"{self.step_ms} ms")

    @property
    def slice_ms(self) -> int:  # type: ignore[override]
        return self.step_ms

    @property
    def end_offset_ms(self) -> int:
        return self.offset_ms

    def last_end(self, slice_start_us: Column) -> Column:
        return self._period_start(slice_start_us) + self.size_ms * 1000

    def start_of(self, end_us: Column) -> Column:
        return self._period_start(end_us - 1)

    def _period_start(self, us: Column) -> Column:
        size_us, offset_us = self.size_ms * 1000, (self.offset_ms % self.size_ms) * 1000
        return F.floor((us - offset_us) / size_us) * size_us + offset_us


@dataclass(frozen=True)
class Session(WindowSlicer):
    gap_ms: int

    def __post_init__(self) -> None:
        _positive("SESSION", gap=self.gap_ms)

    def slice(self, ts: Column) -> Column:
        return F.session_window(ts, _duration(self.gap_ms))


_SLICERS = {
    "TUMBLE": lambda w: Tumble(w.size_ms, w.offset_ms or 0),
    "HOP": lambda w: Hop(w.size_ms, w.slide_ms, w.offset_ms or 0),
    "CUMULATE": lambda w: Cumulate(w.size_ms, w.slide_ms, w.offset_ms or 0),
    "SESSION": lambda w: Session(w.gap_ms),
}


def slicer_for(window: Window) -> WindowSlicer:
    factory = _SLICERS.get(window.kind)
    if factory is None:
        raise SQLModelError(f"{window.kind} windows are not supported on Spark")
    return factory(window)

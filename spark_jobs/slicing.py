"""Window slicing (seed 004): each record updates one slice; windows are combined from slices.

A HOP of 60 min every 1 min written as Spark's ``window(ts, '60 minutes', '1 minute')`` updates 60
windows per record and keeps a state row per open window. Sliced, a record updates one slice of
``gcd(size, slide)`` (stage 1, Spark's native streaming aggregation); a window is assembled from the
retained slices once the watermark passes its end (stage 2, :mod:`spark_jobs.assembly`). The
per-record cost no longer depends on size / slide, and no state row exists per window.

The window kinds themselves (arguments, validation, slice length, which windows a slice counts
in) are the analyzer's (:mod:`analyzer.windows`, one class per kind); here each of three ways of
running them turns that arithmetic into Spark columns, over microseconds since the epoch:

* :class:`SliceIsWindow` (TUMBLE) — a slice is a window;
* :class:`SharedSlices` (HOP, CUMULATE) — windows are assembled from shared slices;
* :class:`MergedSessions` (SESSION) — no fixed slices: Spark's session window merges per key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.model import Window
from stategate.analyzer.windows import Session, SharedKind, SlicedKind


#: How much later a window's ``window_time`` is on Spark than on Flink: Spark's ``window_time()``,
#: which a cascaded window reads (it carries the query's watermark, and a window emitted as the
#: watermark reaches its end is on time at the next aggregation), is the window's last
#: microsecond; Flink's is its last millisecond, as a rowtime is a TIMESTAMP(3).
WINDOW_TIME_LATE_US = 999


def _duration(ms: int) -> str:
    return f"{ms} milliseconds"


class WindowSlicer(ABC):
    """Maps records to slices."""

    #: How much later than Flink's the times it reads are (:data:`WINDOW_TIME_LATE_US` for a
    #: cascade's): one stretch of time for every time, so a window of fixed slices is the same,
    #: and a session's bounds, which are its times', are moved back by it.
    late_us: int = 0

    @abstractmethod
    def slice(self, ts: Column) -> Column:
        """The stage-1 grouping column (a window struct) of a record's time attribute."""

    def carried_slice(self, ts: Column, until: Column) -> Column:
        """The stage-1 grouping column of a re-seeded layout's rows (:mod:`spark_jobs.reseed`):
        an input row's (``until`` NULL) as :meth:`slice`; a carried group's, whose time is its
        slice's start and ``until`` its end, that same slice."""
        return self.slice(ts)

    def bounds(self, window_col: Column) -> tuple[Column, Column]:
        """``(window_start, window_end)`` of an emitted window."""
        return window_col["start"], window_col["end"]


@dataclass(frozen=True)
class SliceIsWindow(WindowSlicer):
    kind: SlicedKind

    def slice(self, ts: Column) -> Column:
        length = self.kind.slice_ms
        return F.window(ts, _duration(length), _duration(length), _duration(self.kind.offset % length))


@dataclass(frozen=True)
class SharedSlices(SliceIsWindow):
    """Slices shared by overlapping windows; :mod:`spark_jobs.assembly` combines them, from the
    latest back where ``latest_first`` (``analyzer.model.Window.latest_slice_first``)."""

    kind: SharedKind
    latest_first: bool

    @property
    def step_us(self) -> int:
        return self.kind.step_ms * 1000

    def first_end(self, slice_end_us: Column) -> Column:
        """The first window end at or after a slice's end."""
        offset = self.kind.end_offset_ms * 1000
        return F.ceil((slice_end_us - offset) / self.step_us) * self.step_us + offset

    def last_end(self, slice_start_us: Column) -> Column:
        """The last window end whose window still holds the slice starting here."""
        return self._floor_period(slice_start_us) + self.kind.size_ms * 1000

    def start_of(self, end_us: Column) -> Column:
        """A window's start, from its end."""
        return self._floor_period(end_us - self.kind.back_ms * 1000)

    def _floor_period(self, us: Column) -> Column:
        period, base = self.kind.period_ms * 1000, (self.kind.offset % self.kind.period_ms) * 1000
        return F.floor((us - base) / period) * period + base


@dataclass(frozen=True)
class MergedSessions(WindowSlicer):
    kind: Session
    late_us: int = 0

    def slice(self, ts: Column) -> Column:
        return F.session_window(ts, _duration(self.kind.gap_ms))

    def bounds(self, window_col: Column) -> tuple[Column, Column]:
        """Spark's session bounds, moved back to Flink's by as much as the times it merged are late."""
        start, end = super().bounds(window_col)
        if not self.late_us:
            return start, end
        late = F.expr(f"INTERVAL {self.late_us} MICROSECONDS")
        return start - late, end - late

    def carried_slice(self, ts: Column, until: Column) -> Column:
        """A carried session is one row at its start whose gap reaches its end, so Spark's session
        window gives it back whole and merges it, as any session, with the rows that reach it."""
        gap_s = F.when(until.isNull(), F.lit(self.kind.gap_ms) / 1000) \
            .otherwise((F.unix_micros(until) - F.unix_micros(ts)) / 1_000_000)
        return F.session_window(ts, F.make_interval(secs=gap_s.cast("decimal(18,6)")))


def slicer_for(window: Window, late_us: int = 0) -> WindowSlicer:
    """The slicer of ``window`` over times ``late_us`` later than Flink's (a cascade's)."""
    shape = window.shape
    if isinstance(shape, SharedKind):
        return SharedSlices(shape, window.latest_slice_first)
    if isinstance(shape, SlicedKind):
        return SliceIsWindow(shape)
    if isinstance(shape, Session):
        return MergedSessions(shape, late_us)
    raise SQLModelError(f"{window.written}: a {type(shape).__name__} window cannot run on Spark here")

"""Window kinds: one small class per kind, as Flink's slice assigners are.

Each kind owns its arguments and checks them when it is built (:meth:`WindowKind.of`), describes
itself, names the arguments a state-compatibility rule compares, and says how its windows are cut
into slices: the slice length, the distance between window ends, where ends lie on that grid,
and which window ends a slice counts in. The analyzer and the Spark engine both read the kinds;
the engine turns the arithmetic into Spark columns without a switch of its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from math import gcd
from typing import ClassVar

from stategate.analyzer.errors import SQLModelError


def format_ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


@dataclass(frozen=True)
class WindowKind(ABC):
    """The kind of a window and its interval arguments (milliseconds)."""

    #: SQL name of the kind, and how many interval arguments its TVF / group function takes.
    name: ClassVar[str]
    arity: ClassVar[tuple[int, int]]

    @classmethod
    def of(cls, name: str, intervals_ms: list[int]) -> WindowKind:
        """The kind called ``name``, built from its interval arguments in SQL order."""
        kind = KINDS.get(name.upper())
        if kind is None:
            raise SQLModelError(f"unknown window kind {name}")
        low, high = kind.arity
        if not low <= len(intervals_ms) <= high:
            raise SQLModelError(f"{kind.name} takes {low} to {high} interval arguments, got {len(intervals_ms)}")
        return kind._from_sql(intervals_ms)

    @classmethod
    @abstractmethod
    def _from_sql(cls, ms: list[int]) -> WindowKind: ...

    @abstractmethod
    def arguments(self) -> tuple[tuple[str, int | None], ...]:
        """``(label, milliseconds)`` of each argument, as rules compare them."""

    @property
    def span_ms(self) -> int | None:
        """The longest a window of this kind lasts; None when it can grow without end (SESSION)."""
        return getattr(self, "size_ms", None)

    def describe(self) -> str:
        return ", ".join(f"{label}={format_ms(value)}" for label, value in self.arguments() if value is not None)

    def _positive(self) -> None:
        for label, value in self.arguments():
            if label != "offset" and value is not None and value <= 0:
                raise SQLModelError(f"{self.name} {label} must be positive")


class SlicedKind(WindowKind):
    """A kind whose windows are cut into slices of a fixed length (all but SESSION)."""

    @property
    @abstractmethod
    def slice_ms(self) -> int:
        """The length of a slice: what one record updates."""

    @property
    def offset(self) -> int:
        return getattr(self, "offset_ms", None) or 0


@dataclass(frozen=True)
class Tumble(SlicedKind):
    name: ClassVar[str] = "TUMBLE"
    arity: ClassVar[tuple[int, int]] = (1, 2)
    size_ms: int
    offset_ms: int | None = None

    def __post_init__(self) -> None:
        self._positive()
        if self.offset_ms is not None and abs(self.offset_ms) >= self.size_ms:
            # Flink checks it of TUMBLE alone: "must satisfy abs(offset) < size".
            raise SQLModelError("TUMBLE offset must be shorter than its size, as Flink requires (abs(offset) < size)")

    @classmethod
    def _from_sql(cls, ms: list[int]) -> Tumble:
        return cls(ms[0], ms[1] if len(ms) > 1 else None)

    def arguments(self) -> tuple[tuple[str, int | None], ...]:
        return (("size", self.size_ms), ("offset", self.offset_ms))

    @property
    def slice_ms(self) -> int:
        return self.size_ms


class SharedKind(SlicedKind):
    """A kind whose windows share slices; a window is assembled from them when it closes.

    Window starts lie on a grid of :attr:`period_ms` (at the offset), and a slice counts in windows
    up to ``size`` after the latest start at or before it. So, for a slice starting at ``a`` and a
    window ending at ``e``:

    * the last window end the slice counts in is ``floor_period(a) + size``;
    * a window's start is ``floor_period(e - back)``;
    * window ends lie every :attr:`step_ms`, at :attr:`end_offset_ms` on that grid.
    """

    size_ms: int
    #: Whether Flink's slicing window operator (a window TVF's) merges a window's slices from the
    #: latest one back (HOP: the slice the window ends with holds its accumulator) or from the first
    #: on (CUMULATE: the first slice does). The order a LISTAGG lists its values in shows it; a
    #: legacy group window's HOP merges its panes from the first on (``Window.latest_slice_first``).
    latest_first: ClassVar[bool]

    @property
    @abstractmethod
    def step_ms(self) -> int:
        """The distance between two window ends."""

    @property
    @abstractmethod
    def end_offset_ms(self) -> int:
        """Where window ends lie on the grid of :attr:`step_ms`."""

    @property
    @abstractmethod
    def period_ms(self) -> int:
        """The grid window starts lie on: the slide for HOP, the size for CUMULATE."""

    @property
    @abstractmethod
    def back_ms(self) -> int:
        """How far before its end a window's start is found: the size for HOP, an instant for CUMULATE."""

    def last_end_ms(self, slice_start: int) -> int:
        return self._floor_period(slice_start) + self.size_ms

    def last_end_at_ms(self, ms: int) -> int:
        """The last window end at or before ``ms``."""
        return (ms - self.end_offset_ms) // self.step_ms * self.step_ms + self.end_offset_ms

    def start_of_ms(self, end: int) -> int:
        return self._floor_period(end - self.back_ms)

    def _floor_period(self, ms: int) -> int:
        base = self.offset % self.period_ms
        return (ms - base) // self.period_ms * self.period_ms + base


@dataclass(frozen=True)
class Hop(SharedKind):
    """Windows of ``size`` every ``slide``; starts lie on the slide grid, ends ``size`` later."""

    name: ClassVar[str] = "HOP"
    arity: ClassVar[tuple[int, int]] = (2, 3)
    latest_first: ClassVar[bool] = True
    slide_ms: int
    size_ms: int
    offset_ms: int | None = None

    def __post_init__(self) -> None:
        self._positive()

    @classmethod
    def _from_sql(cls, ms: list[int]) -> Hop:
        return cls(ms[0], ms[1], ms[2] if len(ms) > 2 else None)

    def arguments(self) -> tuple[tuple[str, int | None], ...]:
        return (("size", self.size_ms), ("slide", self.slide_ms), ("offset", self.offset_ms))

    @property
    def slice_ms(self) -> int:
        return gcd(self.size_ms, self.slide_ms)

    @property
    def step_ms(self) -> int:
        return self.slide_ms

    @property
    def end_offset_ms(self) -> int:
        return (self.offset + self.size_ms) % self.slide_ms

    @property
    def period_ms(self) -> int:
        return self.slide_ms

    @property
    def back_ms(self) -> int:
        return self.size_ms


@dataclass(frozen=True)
class Cumulate(SharedKind):
    """Windows growing by ``step`` from the start of each ``size``-long period."""

    name: ClassVar[str] = "CUMULATE"
    arity: ClassVar[tuple[int, int]] = (2, 3)
    latest_first: ClassVar[bool] = False
    step: int
    size_ms: int
    offset_ms: int | None = None

    def __post_init__(self) -> None:
        self._positive()
        if self.size_ms % self.step:
            raise SQLModelError("CUMULATE size must be a whole multiple of its step")

    @classmethod
    def _from_sql(cls, ms: list[int]) -> Cumulate:
        return cls(ms[0], ms[1], ms[2] if len(ms) > 2 else None)

    def arguments(self) -> tuple[tuple[str, int | None], ...]:
        return (("size", self.size_ms), ("slide", self.step), ("offset", self.offset_ms))

    @property
    def slice_ms(self) -> int:
        return self.step

    @property
    def step_ms(self) -> int:
        return self.step

    @property
    def end_offset_ms(self) -> int:
        return self.offset % self.step

    @property
    def period_ms(self) -> int:
        return self.size_ms

    @property
    def back_ms(self) -> int:
        return 1


@dataclass(frozen=True)
class Session(WindowKind):
    """Windows that close after ``gap`` without events: no fixed slices."""

    name: ClassVar[str] = "SESSION"
    arity: ClassVar[tuple[int, int]] = (1, 1)
    gap_ms: int

    def __post_init__(self) -> None:
        self._positive()

    @classmethod
    def _from_sql(cls, ms: list[int]) -> Session:
        return cls(ms[0])

    def arguments(self) -> tuple[tuple[str, int | None], ...]:
        return (("gap", self.gap_ms),)


KINDS: dict[str, type[WindowKind]] = {k.name: k for k in (Tumble, Hop, Cumulate, Session)}

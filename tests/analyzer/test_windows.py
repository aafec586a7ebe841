"""Window kinds: each checks its own arguments and knows which windows a slice counts in."""

from __future__ import annotations

import pytest

from stategate.analyzer import SQLModelError
from stategate.analyzer.windows import Cumulate, Hop, Session, Tumble, WindowKind

MIN = 60_000


def windows_holding(kind, slice_start: int) -> list[tuple[int, int]]:
    """Every window (start, end) of ``kind`` that holds the slice, by brute force over ends."""
    found = []
    for end in range(slice_start - 10 * kind.size_ms, slice_start + 10 * kind.size_ms, MIN):
        if (end - kind.end_offset_ms) % kind.step_ms:
            continue
        start = kind.start_of_ms(end)
        if start <= slice_start and slice_start + kind.slice_ms <= end:
            found.append((start, end))
    return found


@pytest.mark.parametrize("kind", [
    Hop(slide_ms=10 * MIN, size_ms=25 * MIN),
    Hop(slide_ms=1 * MIN, size_ms=60 * MIN),
    Hop(slide_ms=5 * MIN, size_ms=15 * MIN, offset_ms=2 * MIN),
    Cumulate(step=5 * MIN, size_ms=60 * MIN),
    Cumulate(step=10 * MIN, size_ms=60 * MIN, offset_ms=30 * MIN),
], ids=lambda k: f"{k.name} {k.describe()}")
def test_a_slice_counts_in_the_windows_from_its_end_to_its_last_end(kind) -> None:
    for slice_start in range(kind.offset % kind.slice_ms, 3 * kind.size_ms, kind.slice_ms):
        holding = windows_holding(kind, slice_start)
        assert holding, slice_start
        ends = [end for _, end in holding]
        assert min(ends) >= slice_start + kind.slice_ms
        assert max(ends) == kind.last_end_ms(slice_start)
        assert all(end - start <= kind.size_ms for start, end in holding)


def test_hop_windows_start_on_the_slide_grid() -> None:
    hop = Hop(slide_ms=10 * MIN, size_ms=25 * MIN)
    assert hop.slice_ms == 5 * MIN
    assert [hop.start_of_ms(end) % (10 * MIN) for end in (25 * MIN, 35 * MIN, 45 * MIN)] == [0, 0, 0]


def test_cumulative_windows_start_at_their_period() -> None:
    cumulate = Cumulate(step=5 * MIN, size_ms=60 * MIN)
    assert [cumulate.start_of_ms(end) for end in (65 * MIN, 120 * MIN, 125 * MIN)] == [60 * MIN, 60 * MIN, 120 * MIN]


@pytest.mark.parametrize("name, intervals, message", [
    ("TUMBLE", [0], "TUMBLE size must be positive"),
    *(("TUMBLE", [10 * MIN, offset], r"TUMBLE offset must be shorter than its size, as Flink requires")
      for offset in (10 * MIN, -10 * MIN, 12 * MIN)),
    ("HOP", [MIN], "HOP takes 2 to 3 interval arguments, got 1"),
    ("CUMULATE", [7 * MIN, 60 * MIN], "CUMULATE size must be a whole multiple of its step"),
    ("SESSION", [-MIN], "SESSION gap must be positive"),
    ("SLIDE", [MIN], "unknown window kind SLIDE"),
])
def test_each_kind_checks_its_own_arguments(name, intervals, message) -> None:
    with pytest.raises(SQLModelError, match=message):
        WindowKind.of(name, intervals)


def test_kinds_describe_their_arguments_and_span() -> None:
    assert WindowKind.of("HOP", [MIN, 60 * MIN]).describe() == "size=1h, slide=1min"
    assert Tumble(10 * MIN).span_ms == 10 * MIN
    assert Session(2 * MIN).span_ms is None

"""The lists and sets Spark keeps serialized in an aggregation's state, read back.

``collect_list`` and ``collect_set`` are typed imperative aggregates: Spark's state store keeps
their buffer as the bytes of an ``UnsafeRow`` with one field, the array of values, and its state
reader returns those bytes. A re-seed (:mod:`spark_jobs.reseed`) needs the values, so this module
reads Spark's row format (``UnsafeRow``, ``UnsafeArrayData``): little-endian words of 8 bytes, a
null bit per field or element, fixed-width values in place and variable-width ones (text, nested
rows) as ``offset << 32 | size`` from the start of their row or array. Plain Python: it runs in
Spark's Python workers, once per carried group, at the redeploy only.
"""

from __future__ import annotations

import struct

_WORD = struct.Struct("<q")


def _word(data: bytes, at: int) -> int:
    return _WORD.unpack_from(data, at)[0]


def _bitset(fields: int) -> int:
    """The bytes of the null bits of ``fields`` fields or elements."""
    return (fields + 63) // 64 * 8


def _is_null(data: bytes, base: int, index: int) -> bool:
    return bool(_word(data, base + index // 64 * 8) >> (index % 64) & 1)


def _span(data: bytes, base: int, at: int) -> tuple[int, int]:
    """(start, end) of a variable-width value whose ``offset << 32 | size`` word is at ``at``."""
    word = _word(data, at) & 0xFFFF_FFFF_FFFF_FFFF
    start = base + (word >> 32)
    return start, start + (word & 0xFFFF_FFFF)


def _elements(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each element of the one array a serialized ``collect_list`` or
    ``collect_set`` buffer holds (its elements never NULL, and of variable width here)."""
    start, _ = _span(data, 0, _bitset(1))
    count = _word(data, start)
    slots = start + 8 + _bitset(count)
    return [_span(data, start, slots + 8 * i) for i in range(count)]


def strings(data: bytes | None) -> list[str] | None:
    """The text values of a serialized list or set of text."""
    if data is None:
        return None
    return [data[begin:end].decode("utf-8") for begin, end in _elements(data)]


def arrivals(data: bytes | None) -> list[tuple[int, int, int, str | None]] | None:
    """The values of a serialized list of values kept with their arrivals
    (``struct<o:struct<t,f,n>,v>``, :data:`analyzer.aggregates.ARRIVED`), each as (its arrival's
    time in microseconds, file hash, line; the value as text, or None)."""
    if data is None:
        return None
    found = []
    for row, _ in _elements(data):  # each a row of two fields: the arrival (a row of three longs), the value
        arrival, _ = _span(data, row, row + _bitset(2))
        t, f, n = (_word(data, arrival + _bitset(3) + 8 * i) for i in range(3))
        found.append((t, f, n, _text(data, row, 1, 2)))
    return found


def ordered(data: bytes | None) -> list[tuple[int, int, str | None]] | None:
    """The values of a serialized list of values kept with their arrivals as two longs
    (``struct<h,l,v>``, :data:`analyzer.aggregates.ORDERED`), each as (the two longs, the value as
    text, or None)."""
    if data is None:
        return None
    return [(_word(data, row + _bitset(3)), _word(data, row + _bitset(3) + 8), _text(data, row, 2, 3))
            for row, _ in _elements(data)]


def keyed(data: bytes | None) -> list[tuple[str | None, str | None]] | None:
    """The values of a serialized list of values kept with their keys (``struct<k,v>``,
    :data:`analyzer.aggregates.KEYED`), each as (its key, the value as text), either None."""
    if data is None:
        return None
    return [(_text(data, row, 0, 2), _text(data, row, 1, 2)) for row, _ in _elements(data)]


def _text(data: bytes, row: int, index: int, fields: int) -> str | None:
    """Text field ``index`` of the row of ``fields`` fields at ``row``; None where NULL."""
    if _is_null(data, row, index):
        return None
    start, end = _span(data, row, row + _bitset(fields) + 8 * index)
    return data[start:end].decode("utf-8")

"""Interval literals to milliseconds, so sizes compare by value: ``'300' SECOND`` is ``'5' MINUTE``.

Flink's day-time intervals are read whole: a single unit (``INTERVAL '5' MINUTE``, ``'5' MINUTES``,
``'5 minutes'``), a leading precision (``INTERVAL '100' MINUTE(3)``) and a span of units
(``INTERVAL '1:30' MINUTE TO SECOND``, ``'2 10:30:15.5' DAY TO SECOND``). Arithmetic is exact
(decimal, not float), and a value Flink cannot hold (beyond a Java long of milliseconds) is an error
that names the literal, never an overflow.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from stategate.analyzer.errors import SQLModelError

_UNIT_MS = {
    "MILLISECOND": 1,
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
}
_ALIASES = {"MS": "MILLISECOND", "S": "SECOND", "SEC": "SECOND", "MIN": "MINUTE", "H": "HOUR", "D": "DAY"}
#: Year-month units: a month has no fixed length in milliseconds, so no window can be sized by one.
_MONTH_UNITS = ("YEAR", "MONTH", "QUARTER")
#: The fields of a day-time span, in order, and the largest value each takes after the first.
_SPAN_FIELDS = (("DAY", None), ("HOUR", 23), ("MINUTE", 59), ("SECOND", 59))
#: The longest interval stategate reads: Flink (and Spark) keep an interval in a Java long of ms.
MAX_MS = 2**63 - 1
_TEXT = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*$")


def unit_ms(unit: str) -> int:
    name = unit.upper()
    name = _ALIASES.get(name, name)
    if name not in _UNIT_MS and name.endswith("S") and name[:-1] in _UNIT_MS:
        name = name[:-1]
    if name in _MONTH_UNITS or name.rstrip("S") in _MONTH_UNITS:
        raise SQLModelError(f"interval unit {unit!r} has no fixed length in milliseconds: use DAY or smaller")
    if name not in _UNIT_MS:
        raise SQLModelError(f"unsupported interval unit {unit!r} (use MILLISECOND..DAY)")
    return _UNIT_MS[name]


def interval_ms(node: exp.Expr) -> int:
    """Milliseconds of an INTERVAL literal (see the module's docstring); a clear error otherwise."""
    if not isinstance(node, exp.Interval):
        raise SQLModelError(f"expected an INTERVAL literal, found {_clip(node.sql())!r}")
    value = node.this
    text = value.name if isinstance(value, exp.Literal) else value.sql() if value else ""
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        ms = _span_ms(text, _unit_name(unit.this), _unit_name(unit.expression), node)
    else:
        match = _TEXT.match(text)
        if not match:
            raise SQLModelError(f"cannot read interval {_clip(node.sql())!r}")
        amount, inline_unit = match.groups()
        unit_name = _unit_name(unit) if unit is not None else inline_unit
        if not unit_name:
            raise SQLModelError(f"interval {_clip(node.sql())!r} has no unit")
        ms = Decimal(amount) * unit_ms(unit_name)
    return _whole(ms, node)


def duration_ms(text: str) -> int:
    """A duration as Flink's configuration writes one: ``'10 min'``, ``'5s'``, ``'2 hours'``; a bare
    number is milliseconds."""
    match = _TEXT.match(text)
    if not match:
        raise SQLModelError(f"cannot read the duration {_clip(text)!r} (write '10 min', '5 s' or '500 ms')")
    amount, unit = match.groups()
    ms = Decimal(amount) * (unit_ms(unit) if unit else 1)
    if ms < 0 or ms != ms.to_integral_value() or ms > MAX_MS:
        raise SQLModelError(f"the duration {_clip(text)!r} is not a whole number of milliseconds from 0 to {MAX_MS}")
    return int(ms)


def _unit_name(unit: exp.Expr) -> str:
    """``MINUTE`` of ``MINUTE`` and of ``MINUTE(3)`` (a leading precision, parsed as a call)."""
    if isinstance(unit, exp.Var):
        return unit.name
    if isinstance(unit, exp.Func):
        return unit.key.upper()
    raise SQLModelError(f"unsupported interval unit {_clip(unit.sql())!r}")


def _span_ms(text: str, first: str, last: str, node: exp.Expr) -> Decimal:
    """``'1 10:30'`` of ``DAY TO MINUTE``: the fields from ``first`` to ``last``, the day parted by a
    space, the rest by colons, seconds with a fraction; every field after the first in its range."""
    names = [name for name, _ in _SPAN_FIELDS]
    first, last = first.upper(), last.upper()
    if first not in names or last not in names or names.index(first) >= names.index(last):
        raise SQLModelError(f"unsupported interval span {first} TO {last} in {_clip(node.sql())!r} "
                            "(Flink's day-time spans run from DAY, HOUR or MINUTE to a smaller unit)")
    fields = _SPAN_FIELDS[names.index(first):names.index(last) + 1]
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    parts = re.split(r"[ :]", body.lstrip("+-"))
    if len(parts) != len(fields) or not all(re.fullmatch(r"\d+(\.\d+)?" if name == "SECOND" else r"\d+", part)
                                            for part, (name, _) in zip(parts, fields)):
        raise SQLModelError(f"cannot read interval {_clip(node.sql())!r}: {first} TO {last} takes "
                            f"{len(fields)} fields, as in '{_example(fields)}'")
    total = Decimal(0)
    for position, (part, (name, largest)) in enumerate(zip(parts, fields)):
        value = Decimal(part)
        if position and largest is not None and value > largest:
            raise SQLModelError(f"interval {_clip(node.sql())!r}: {name} field {part} is above {largest}")
        total += value * _UNIT_MS[name]
    return sign * total


_EXAMPLE = {"DAY": "1", "HOUR": "10", "MINUTE": "30", "SECOND": "15.5"}


def _example(fields: tuple[tuple[str, int | None], ...]) -> str:
    """A value of the span's layout: ``1 10:30`` for DAY TO MINUTE, ``30:15.5`` for MINUTE TO SECOND."""
    text = ""
    for name, _ in fields:
        text += ("" if not text else " " if text == _EXAMPLE["DAY"] else ":") + _EXAMPLE[name]
    return text


def _whole(ms: Decimal, node: exp.Expr) -> int:
    try:
        whole = ms.to_integral_value()
    except InvalidOperation:
        whole = None
    if whole is None or whole != ms:
        raise SQLModelError(f"interval {_clip(node.sql())!r} is not a whole number of milliseconds")
    if abs(whole) > MAX_MS:
        raise SQLModelError(f"interval {_clip(node.sql())!r} is longer than the {MAX_MS} ms an interval can hold")
    return int(whole)


def _clip(text: str, width: int = 60) -> str:
    """A literal as quoted in an error: a 400-digit one is cut, not repeated in full."""
    return text if len(text) <= width else text[:width - 1] + "…"

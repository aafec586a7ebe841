"""Interval literals to milliseconds, so sizes compare by value: ``'300' SECOND`` is ``'5' MINUTE``."""

from __future__ import annotations

import re

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
_TEXT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*$")


def unit_ms(unit: str) -> int:
    name = unit.upper()
    name = _ALIASES.get(name, name)
    if name not in _UNIT_MS and name.endswith("S") and name[:-1] in _UNIT_MS:
        name = name[:-1]
    if name not in _UNIT_MS:
        raise SQLModelError(f"unsupported interval unit {unit!r} (use MILLISECOND..DAY)")
    return _UNIT_MS[name]


def interval_ms(node: exp.Expression) -> int:
    """Milliseconds of ``INTERVAL '5' MINUTE`` / ``INTERVAL '5 minutes'``; a clear error otherwise."""
    if not isinstance(node, exp.Interval):
        raise SQLModelError(f"expected an INTERVAL literal, found {node.sql()!r}")
    value = node.this
    unit = node.args.get("unit")
    text = value.name if isinstance(value, exp.Literal) else value.sql() if value else ""
    match = _TEXT.match(text)
    if not match:
        raise SQLModelError(f"cannot read interval {node.sql()!r}")
    amount, inline_unit = match.groups()
    unit_name = unit.name if unit is not None else inline_unit
    if not unit_name:
        raise SQLModelError(f"interval {node.sql()!r} has no unit")
    ms = float(amount) * unit_ms(unit_name)
    if ms != int(ms):
        raise SQLModelError(f"interval {node.sql()!r} is not a whole number of milliseconds")
    return int(ms)

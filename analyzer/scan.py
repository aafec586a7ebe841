"""A first, linear pass over a script: what the tokenizer and the recursive parser must never see.

sqlglot's tokenizer reads about 4 s per MB of ``(`` and its parser recurses about 20 Python frames
per level of parentheses, so a hostile file would run for minutes or end in ``RecursionError``. One
regular-expression pass, before either runs, refuses with the line and column of the place:

* a NUL byte (no SQL text holds one: a binary file, or a truncated upload);
* a string, quoted identifier or ``/* comment`` that is never closed;
* parentheses (expressions or subqueries) nested deeper than :data:`MAX_NESTING`.

It also drops a UTF-8 byte-order mark, which editors on Windows write and Flink accepts. Strings,
identifiers and comments are read as the ``flink`` dialect's tokenizer reads them (``''`` and
``\\'`` inside strings, ``````  inside identifiers, comments that do not nest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Iterator

from stategate.analyzer.errors import SQLModelError
from stategate.analyzer.stack import MAX_NESTING

BOM = "\ufeff"
_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/", re.S)
_OPENERS = {"'": "a string", "`": "a quoted identifier", "/*": "a comment"}
_OPENED = re.compile(r"'|`|/\*")
_NOT_PARENS = re.compile(r"[^()]+")
_STEP = {"(": 1, ")": -1}


@dataclass(frozen=True)
class Span:
    """One statement of a script: where it starts and ends, and the line and column it starts at."""

    start: int
    end: int
    line: int
    col: int


@dataclass(frozen=True)
class Script:
    """A script that passed the scan: its text, and the text with strings, quoted identifiers and
    comments blanked (so a ``;`` or ``(`` in ``code`` is SQL's own)."""

    text: str
    code: str

    def statements(self) -> Iterator[Span]:
        """Each statement between semicolons, without the ones that hold only comments. Lines and
        columns are counted as the text is walked once (a 5 MB script on one line included)."""
        line, line_start, position = 1, 0, 0
        for end in [m.start() for m in re.finditer(";", self.code)] + [len(self.code)]:
            start = position
            while start < end and self.code[start].isspace():
                start += 1
            if start < end:
                newlines = self.text.count("\n", position, start)
                if newlines:
                    line, line_start = line + newlines, self.text.rfind("\n", position, start) + 1
                yield Span(start, end, line, start - line_start + 1)
                position = start
            newlines = self.text.count("\n", position, end)
            if newlines:
                line, line_start = line + newlines, self.text.rfind("\n", position, end) + 1
            position = end + 1


def prepare(sql: str, source: str) -> Script:
    """``sql`` without a leading byte-order mark, after the checks above."""
    if sql.startswith(BOM):
        sql = sql[1:]
    nul = sql.find("\x00")
    if nul >= 0:
        raise _error("a NUL byte: this is not a SQL text (binary or truncated?)", sql, nul, source, clause="")
    code = _QUOTED.sub(lambda match: " " * len(match.group()), sql)
    opened = _OPENED.search(code)
    if opened is not None:
        raise _error(f"{_OPENERS[opened.group()]} opened here is never closed", sql, opened.start(), source)
    parens = _NOT_PARENS.sub("", code)
    if parens and max(accumulate(map(_STEP.__getitem__, parens))) > MAX_NESTING:
        raise _error(f"parentheses or subqueries nest deeper than {MAX_NESTING} levels, the most stategate "
                     "analyses", sql, _too_deep(code), source)
    return Script(sql, code)


def _too_deep(code: str) -> int:
    """Where the nesting first goes past the limit."""
    depth = 0
    for match in re.finditer(r"[()]", code):
        depth += _STEP[match.group()]
        if depth > MAX_NESTING:
            return match.start()
    raise AssertionError("called only when the nesting is too deep")


def _error(problem: str, sql: str, index: int, source: str, clause: str | None = None) -> SQLModelError:
    line = sql.count("\n", 0, index) + 1
    col = index - sql.rfind("\n", 0, index)
    return SQLModelError(f"syntax error: {problem}", source=source, line=line, col=col,
                         clause=sql[index:index + 40].split("\n")[0] if clause is None else clause)

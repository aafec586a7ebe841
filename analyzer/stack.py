"""Deeply nested SQL on a stack that fits it.

sqlglot parses, prints and transforms expressions recursively: about 20 Python frames per level of
parentheses and 10 per nested subquery (measured). Python's default limit of 1,000 frames gives up at
about 45 levels, far short of what generated SQL nests. So the analyzer's entry points run on a
thread of their own, with a 256 MiB stack and a recursion limit with room for :data:`MAX_NESTING`
levels twice over; :mod:`analyzer.scan` refuses deeper nesting before the parser sees it. What
still recurses too deeply (a chain of tens of thousands of operators) raises ``RecursionError``
inside that thread, which the entry points turn into a located error.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Callable, TypeVar

#: The deepest nesting of parentheses or subqueries the analyzer reads (documented in the README).
MAX_NESTING = 1000
_FRAMES = 40 * MAX_NESTING
_STACK_BYTES = 256 << 20

_T = TypeVar("_T")
_inside = threading.local()
_one_at_a_time = threading.Lock()  # the recursion limit is the interpreter's, not the thread's


def deep(function: Callable[..., _T]) -> Callable[..., _T]:
    """``function`` run on a thread with room for :data:`MAX_NESTING` levels; a call from inside one
    runs where it is."""

    @functools.wraps(function)
    def run_deep(*args, **kwargs) -> _T:
        if getattr(_inside, "deep", False):
            return function(*args, **kwargs)
        outcome: dict[str, object] = {}

        def run() -> None:
            _inside.deep = True
            try:
                outcome["value"] = function(*args, **kwargs)
            except BaseException as error:  # noqa: BLE001 - handed to the caller's thread, raised there
                outcome["error"] = error

        with _one_at_a_time:
            limit, size = sys.getrecursionlimit(), threading.stack_size()
            sys.setrecursionlimit(max(limit, _FRAMES))
            try:
                threading.stack_size(_STACK_BYTES)
                try:
                    worker = threading.Thread(target=run, name=f"stategate-{function.__name__}", daemon=True)
                    worker.start()
                finally:
                    threading.stack_size(size)
                worker.join()
            finally:
                sys.setrecursionlimit(limit)
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]

    return run_deep

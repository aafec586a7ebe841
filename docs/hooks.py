"""MkDocs hook: the Airflow reference is read from the code, so it cannot drift from it.

A line ``::: stategate.provider.operators.gate.StateGateOperator`` in a page becomes that object's
reference: its docstring's description, a table of its ``:param:`` lines, its template fields
and, for a function, its signature. The build fails (and with it ``make test``) when a keyword the
object takes has no ``:param:`` line in its docstring or its bases', as ``mkdocs build --strict``
fails on a broken link.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import tempfile
from typing import Any

from mkdocs.exceptions import PluginError

# Importing an operator imports Airflow, which writes a configuration into AIRFLOW_HOME.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="stategate-docs-"))

MARKER = re.compile(r"^::: ([\w.]+)$", re.MULTILINE)
PARAM = re.compile(r"^:param (\w+):\s*(.*)$")
ROLE = re.compile(r":\w+:`([^`]+)`")


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda match: reference(match.group(1)), markdown)


def reference(dotted: str) -> str:
    module, _, name = dotted.rpartition(".")
    obj = getattr(importlib.import_module(module), name)
    description, params = _docstring(obj)
    for base in inspect.getmro(obj)[1:] if inspect.isclass(obj) else ():
        if base.__module__.startswith("stategate."):
            params |= {key: text for key, text in _docstring(base)[1].items() if key not in params}
    missing = [key for key in _keywords(obj) if key not in params]
    if missing:
        raise PluginError(f"docs: {dotted} takes {', '.join(missing)} with no :param: line in its docstring")
    lines = [f"### `{name}`", "", f"`{dotted}`", ""]
    if inspect.isclass(obj):
        bases = ", ".join(f"`{base.__name__}`" for base in obj.__bases__)
        lines += [f"Subclass of {bases}.", ""]
    else:
        lines += ["```python", f"{name}{inspect.signature(obj)}", "```", ""]
    lines += [description, ""]
    if params:
        lines += ["| parameter | meaning |", "|---|---|"]
        lines += [f"| `{key}` | {text} |" for key, text in params.items()]
        lines.append("")
    fields = getattr(obj, "template_fields", ())
    if fields:
        lines += ["Template fields: " + ", ".join(f"`{field}`" for field in fields) + ".", ""]
    return "\n".join(lines)


def _docstring(obj: Any) -> tuple[str, dict[str, str]]:
    """The description and the ``:param:`` texts of ``obj``'s own docstring, in Markdown."""
    doc = inspect.getdoc(obj) if obj.__doc__ else None
    if not doc:
        raise PluginError(f"docs: {obj.__module__}.{obj.__qualname__} has no docstring")
    description: list[str] = []
    params: dict[str, str] = {}
    current = None
    for line in _markdown(doc).splitlines():
        match = PARAM.match(line)
        if match:
            current = match.group(1)
            params[current] = match.group(2)
        elif current is not None and line.startswith(" "):
            params[current] += " " + line.strip()
        else:
            current = None
            description.append(line)
    return "\n".join(description).strip(), params


def _markdown(text: str) -> str:
    return ROLE.sub(r"`\1`", text.replace("``", "`"))


def _keywords(obj: Any) -> list[str]:
    """The keyword parameters a user passes: the object's own, not its bases' ``**kwargs``."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    return [param.name for param in inspect.signature(target).parameters.values()
            if param.name != "self" and param.kind not in (param.VAR_KEYWORD, param.VAR_POSITIONAL)]

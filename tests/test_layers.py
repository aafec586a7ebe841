"""The layers: analyzer ← engine (spark_jobs) ← provider ← dags, each importing only those below it.

Every module's imports are read from its source (module level, inside functions and under
``TYPE_CHECKING`` alike): none may reach a higher layer, and no modules may import each other in a
circle. So the analyzer runs without PySpark or Airflow, the engine without Airflow, and a reader
following one concept meets it in one place.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Each layer's directory in the repository, the name its modules are imported by, and its rank.
LAYERS = (("analyzer", "stategate.analyzer", 0), ("spark_jobs", "stategate.spark_jobs", 1),
          ("provider", "stategate.provider", 2), ("dags", "dags", 3))


def modules() -> dict[str, Path]:
    """Every module of the product by its import name (a package by its own name)."""
    found = {}
    for folder, name, _ in LAYERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            found[".".join((name, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The product's modules ``path`` imports: a name imported from a package is the module of that
    name where there is one, else the package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                      for alias in node.names}
    return {name for name in found if name in known}


def rank(module: str) -> int:
    return next(r for _, name, r in LAYERS if module == name or module.startswith(name + "."))


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports(path, known) - {module} for module, path in known.items()}


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(f"{module} imports {target}" for module, targets in graph().items()
                    for target in targets if rank(target) > rank(module))
    assert upward == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    edges = graph()
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(edges[module]):
            if target in path:
                cycles.append(path[path.index(target):] + [target])
            elif target not in done:
                visit(target, [*path, target])
        done.add(module)

    for module in sorted(edges):
        if module not in done:
            visit(module, [module])
    assert [" -> ".join(cycle) for cycle in cycles] == []


def test_the_layers_are_read_from_every_module() -> None:
    """The reading itself: the product's modules are found, and the arrows known to exist are seen."""
    edges = graph()
    assert len(edges) > 60
    assert "stategate.analyzer.model" in edges["stategate.analyzer.build"]
    assert "stategate.spark_jobs.checkpoint" in edges["stategate.spark_jobs.cutover"]
    assert "stategate.provider.hooks.deployment" in edges["stategate.provider.operators.base"]

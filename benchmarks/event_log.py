"""Where a run's time goes, from Spark's event log: per stage and per operator, two runs side by side.

Spark writes one JSON event a line when ``spark.eventLog.enabled`` is set. Two of them carry the
profile: each SQL execution's start holds its physical plan, every operator with the ids of its
metrics (``time to update``, ``duration`` of a generated-code pipeline, ``shuffle bytes
written``...), and each completed stage holds the totals of those metrics and of its tasks' run
time. Summed over every micro-batch of a run, they say which operator costs what; printed beside
the peer's, they say where one engine spends the time the other does not.

Reading it: a stage's run time is its tasks' time summed (on ``local[2]`` two run at once); a
generated-code pipeline's ``duration`` includes the time it waited on the operators it reads from,
so pipelines nest rather than add up; a stage that reads a cached frame lists the operators that
built it.

    .venv/bin/python benchmarks/event_log.py EVENT_LOG_DIR [PEER_EVENT_LOG_DIR]

``scale_bench.py --profile`` runs both engines with the event log on and prints this per case.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Iterator


def submit_args(directory: Path) -> str:
    """``PYSPARK_SUBMIT_ARGS`` for a run that logs its events under ``directory``: set before Spark
    starts, as the event log cannot be switched on later; written plain, to be read line by line."""
    return (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir={directory.as_uri()} "
            "--conf spark.eventLog.compress=false pyspark-shell")


#: Metric kinds that add up over tasks and batches (averages do not): the unit shown, and what a
#: logged value is divided by to be in it.
_SUMMED = {"timing": ("ms", 1), "nsTiming": ("ms", 1e6), "size": ("bytes", 1), "sum": ("", 1)}
#: Metrics that are levels, not flows (the state's size, a peak): their sum over batches means nothing.
_LEVELS = ("peak", "memory", "size of all", "total state rows", "state store instances")
#: Stage totals kept per stage, from its task metrics.
_RUN_TIME, _CPU_TIME = "internal.metrics.executorRunTime", "internal.metrics.executorCpuTime"


def events(directory: Path) -> Iterator[dict]:
    """Every event of the one application logged under ``directory``."""
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")
                       and "appstatus" not in p.name):
        with path.open() as lines:
            for line in lines:
                yield json.loads(line)


def profile(directory: Path) -> dict[str, float]:
    """``label → total``: per stage kind its run time and CPU time (ms) and count, per operator
    each summed metric (ms, bytes or a count), over the whole run."""
    metric_of: dict[int, tuple[str, float]] = {}  # accumulator id → (label, divisor)
    totals: dict[str, float] = defaultdict(float)
    for event in events(directory):
        kind = event["Event"]
        if kind.endswith("SQLExecutionStart") or kind.endswith("SQLAdaptiveExecutionUpdate"):
            for label, metric in _metrics(event["sparkPlanInfo"]):
                summed = _SUMMED.get(metric["metricType"])
                if summed is not None and not any(level in metric["name"] for level in _LEVELS):
                    unit, divisor = summed
                    metric_of[metric["accumulatorId"]] = (f"{label}: {metric['name']} {unit}".rstrip(), divisor)
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stage = " + ".join(_stage_operators(info))
            totals[f"stages: {stage}"] += 1
            for accumulable in info["Accumulables"]:
                name, value = accumulable["Name"], accumulable["Value"]
                if name == _RUN_TIME:
                    totals[f"stage run time ms: {stage}"] += float(value)
                elif name == _CPU_TIME:
                    totals[f"stage CPU time ms: {stage}"] += float(value) / 1e6
                elif accumulable["ID"] in metric_of:
                    label, divisor = metric_of[accumulable["ID"]]
                    totals[label] += float(value) / divisor
    return dict(totals)


def _metrics(node: dict) -> Iterator[tuple[str, dict]]:
    """(operator label, metric) of every operator of a plan. A generated-code pipeline is named
    after the operators it fuses and the operator it reads from, as its number differs between
    plans: ``codegen HashAggregate < StateStoreSave``."""
    name = _plain(node["nodeName"])
    if name == "WholeStageCodegen":
        fused, edge = _fused(node["children"][0])
        label = f"codegen {' > '.join(fused)} < {edge}"
    else:
        label = name
    for metric in node["metrics"]:
        yield label, metric
    for child in node["children"]:
        yield from _metrics(child)


def _fused(node: dict) -> tuple[list[str], str]:
    """The operators of a generated-code pipeline, top down, and the operator it reads from."""
    fused: list[str] = []
    while node["nodeName"] != "InputAdapter" and node["children"]:
        fused.append(_plain(node["nodeName"]))
        node = node["children"][0]
    if node["nodeName"] == "InputAdapter" and node["children"]:
        return fused, _plain(node["children"][0]["nodeName"])
    fused.append(_plain(node["nodeName"]))
    return fused, "input"


def _stage_operators(info: dict) -> list[str]:
    """The operators a stage runs (its RDDs' plan scopes), without the generated-code pipelines."""
    names = set()
    for rdd in info["RDD Info"]:
        scope = rdd.get("Scope")
        if scope:
            name = _plain(json.loads(scope)["name"])
            if name != "WholeStageCodegen":
                names.add(name)
    return sorted(names) or [info["Stage Name"].split(" at ")[0]]


def _plain(name: str) -> str:
    """An operator's name without its number in the plan: ``WholeStageCodegen (3)`` → ``WholeStageCodegen``."""
    return re.sub(r"\s*\(\d+\)$", "", name).strip()


def side_by_side(first: dict[str, float], second: dict[str, float], names: tuple[str, str],
                 least: float = 0.02) -> str:
    """The two profiles as one table, largest first; a line whose larger value is under ``least``
    of the larger total run time is left out (bytes and counts are always kept where timings are)."""
    total = max(sum(v for k, v in p.items() if k.startswith("stage run time")) for p in (first, second)) or 1.0
    lines = [f"{'':<120}{names[0]:>16}{names[1]:>16}"]
    for key in sorted(first.keys() | second.keys(),
                      key=lambda k: (not k.startswith("stage"), -max(first.get(k, 0), second.get(k, 0)))):
        a, b = first.get(key, 0.0), second.get(key, 0.0)
        timed = key.endswith(" ms") or key.startswith(("stage run time", "stage CPU time"))
        if (timed and max(a, b) < least * total) or (not timed and max(a, b) == 0):
            continue
        lines.append(f"{key[:119]:<120}{a:>16,.0f}{b:>16,.0f}")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    first = profile(Path(sys.argv[1]))
    second = profile(Path(sys.argv[2])) if len(sys.argv) == 3 else {}
    print(side_by_side(first, second, (Path(sys.argv[1]).name, Path(sys.argv[-1]).name if second else "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
